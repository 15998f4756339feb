// Signing-secret rotation: while two secrets are in force, each delivery carries a signature
// from each, so a receiver that knows either accepts it; once the old one is retired, a
// receiver that knows only it refuses deliveries (401) and the task fails.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Boomerang, Receiver } from 'boomerang-client';
import { listen, startServer, waitForStatus } from './support.mjs';

let server;
let boomerang;
const sites = [];

before(async () => {
  server = await startServer();
  boomerang = new Boomerang({ baseUrl: server.url, apiKey: server.apiKey });
});
after(async () => {
  for (const site of sites) await site.close();
  await server?.stop();
});

/** A receiver knowing only `secrets`, on a loopback port of its own; counts its deliveries. */
async function receiverWith(secrets) {
  const got = [];
  const receiver = new Receiver({ secrets }).register('hook', ({ taskId }) => { got.push(taskId); });
  const site = await listen(receiver.nodeHandler());
  sites.push(site);
  return { url: `${site.url}/hook`, got };
}

test('a rotation keeps both secrets good until the old one is retired', async () => {
  const old = server.signingSecret;
  const rotated = await boomerang.signingSecrets.rotate({ grace_period: '1h' });
  assert.equal(rotated.secrets.length, 2);
  const [newest, previous] = rotated.secrets;
  assert.equal(previous.secret, old);
  assert.equal(newest.expires_at, null);
  assert.ok(previous.expires_at, 'the old secret expires after the grace period');

  const oldOnly = await receiverWith(old);
  const newOnly = await receiverWith(newest.secret);
  const both = await receiverWith([old, newest.secret]);
  for (const receiver of [oldOnly, newOnly, both]) {
    const task = await boomerang.tasks.create({ url: receiver.url });
    await waitForStatus(boomerang, task.id, 'succeeded');
    assert.deepEqual(receiver.got, [task.id]);
  }

  const retired = await boomerang.signingSecrets.retire(previous.id);
  assert.deepEqual(retired.secrets.map((s) => s.id), [newest.id]);
  assert.deepEqual((await boomerang.signingSecrets.list()).secrets.map((s) => s.id), [newest.id]);

  const refused = await boomerang.tasks.create({ url: oldOnly.url, retry: { schedule: ['1s'], max_attempts: 1 } });
  const failed = await waitForStatus(boomerang, refused.id, 'failed');
  assert.equal(failed.attempts[0].status_code, 401);
  assert.equal(oldOnly.got.length, 1, 'the handler never saw the delivery signed without its secret');

  const taken = await boomerang.tasks.create({ url: newOnly.url });
  await waitForStatus(boomerang, taken.id, 'succeeded');
  assert.equal(newOnly.got.at(-1), taken.id);
});

test('the only secret in force cannot be retired: a 422 naming id', async () => {
  const [only] = (await boomerang.signingSecrets.list()).secrets;
  const error = await boomerang.signingSecrets.retire(only.id).catch((e) => e);
  assert.equal(error.status, 422);
  assert.equal(error.field, 'id');
});
