// The receiver: real deliveries from the real server to real receivers on loopback (Node
// `http` and Express), and requests signed here with the stock library to see each answer.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import express from 'express';
import { Webhook } from 'standardwebhooks';
import { Boomerang, PermanentFailure, Receiver, RetryLater } from 'boomerang-client';
import { listen, startServer, waitForStatus } from './support.mjs';

let server;
let boomerang;
let receiver;
let hooks;
const deliveries = [];
const flaky = new Map();
const errors = [];

before(async () => {
  server = await startServer();
  receiver = new Receiver({ secrets: server.signingSecret, onError: (error) => errors.push(error) });
  receiver
    .register('order-paid', (delivery) => {
      deliveries.push(delivery);
      return 'thanks';
    })
    // Fails the first attempt of each task, then takes it.
    .register('flaky', ({ taskId, attempt }) => {
      flaky.set(taskId, [...(flaky.get(taskId) ?? []), attempt]);
      if (attempt === 1) throw new RetryLater();
    })
    .register('gone', () => {
      throw new PermanentFailure('order 42 was deleted');
    })
    .register('busy', () => {
      throw new RetryLater(2, 'down for maintenance');
    })
    .register('broken', () => {
      throw new Error('a bug');
    });
  hooks = await listen(receiver.nodeHandler());
  boomerang = new Boomerang({ baseUrl: server.url, apiKey: server.apiKey, callbackBase: `${hooks.url}/callbacks` });
});
after(async () => {
  await hooks?.close();
  await server?.stop();
});

/** A request to the receiver signed here with the stock library, as Boomerang would sign it. */
async function signed(path, { body = '{"order":42}', secret = server.signingSecret, at = new Date(), id = 'msg_test' } = {}) {
  const headers = {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, at, body),
    'boomerang-attempt': '1',
  };
  const response = await fetch(`${hooks.url}${path}`, { method: 'POST', headers, body });
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.text() };
}

test('a delivery is verified and dispatched by its alias', async () => {
  const task = await boomerang.tasks.create({ url: boomerang.callbackUrl('order-paid'), body: { order: 42, event: 'paid' } });
  const done = await waitForStatus(boomerang, task.id, 'succeeded');
  const delivery = deliveries.find((d) => d.taskId === task.id);
  assert.ok(delivery, 'the handler was called');
  assert.equal(delivery.alias, 'order-paid');
  assert.deepEqual(delivery.body, { order: 42, event: 'paid' });
  assert.equal(delivery.attempt, 1);
  assert.equal(delivery.headers['webhook-id'], task.id);
  assert.ok(Math.abs(delivery.timestamp.getTime() - Date.now()) < 60_000, String(delivery.timestamp));
  // The handler's string is the response body, which Boomerang keeps with the attempt.
  assert.equal(done.attempts[0].status_code, 200);
  assert.equal(done.attempts[0].response, 'thanks');
});

test('a text body is handed over as text', async () => {
  const task = await boomerang.tasks.create({ url: boomerang.callbackUrl('order-paid'), body: 'order 42 paid' });
  await waitForStatus(boomerang, task.id, 'succeeded');
  assert.equal(deliveries.find((d) => d.taskId === task.id).body, 'order 42 paid');
});

test('RetryLater without seconds answers 500, and the next attempt is taken', async () => {
  const task = await boomerang.tasks.create({ url: boomerang.callbackUrl('flaky'), retry: { schedule: ['1s'], max_attempts: 3 } });
  const done = await waitForStatus(boomerang, task.id, 'succeeded');
  assert.deepEqual(done.attempts.map((a) => a.status_code), [500, 200]);
  assert.deepEqual(flaky.get(task.id), [1, 2]);
});

test('PermanentFailure answers 410 and fails the task at once', async () => {
  const task = await boomerang.tasks.create({ url: boomerang.callbackUrl('gone'), retry: { schedule: ['1s'], max_attempts: 5 } });
  const done = await waitForStatus(boomerang, task.id, 'failed');
  assert.equal(done.attempts.length, 1);
  assert.equal(done.attempts[0].status_code, 410);
  assert.equal(done.attempts[0].response, 'order 42 was deleted');
});

test('RetryLater with seconds answers 503 with Retry-After', async () => {
  const answer = await signed('/callbacks/busy');
  assert.equal(answer.status, 503);
  assert.equal(answer.retryAfter, '2');
  assert.equal(answer.body, 'down for maintenance');
});

test('another error answers 500 and is reported to onError', async () => {
  const answer = await signed('/callbacks/broken');
  assert.equal(answer.status, 500);
  assert.equal(answer.retryAfter, null);
  assert.equal(errors.at(-1)?.message, 'a bug');
});

test('an unknown alias is a 404, once the signature holds', async () => {
  assert.equal((await signed('/callbacks/nobody')).status, 404);
  assert.equal((await signed('/callbacks/nobody', { secret: 'whsec_' + Buffer.from('not the secret').toString('base64') })).status, 401);
});

test('a forged, tampered, stale or unsigned delivery is refused with 401', async () => {
  const before = deliveries.length;
  const other = 'whsec_' + Buffer.alloc(32, 7).toString('base64');
  assert.equal((await signed('/callbacks/order-paid')).status, 200, 'the same request, rightly signed, is taken');
  assert.equal((await signed('/callbacks/order-paid', { secret: other })).status, 401);
  assert.equal((await signed('/callbacks/order-paid', { at: new Date(Date.now() - 10 * 60_000) })).status, 401);
  assert.equal((await signed('/callbacks/order-paid', { at: new Date(Date.now() + 10 * 60_000) })).status, 401);

  const at = new Date();
  const headers = {
    'webhook-id': 'msg_x',
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(server.signingSecret).sign('msg_x', at, '{"order":42}'),
  };
  const tampered = await fetch(`${hooks.url}/callbacks/order-paid`, { method: 'POST', headers, body: '{"order":43}' });
  assert.equal(tampered.status, 401);
  const unsigned = await fetch(`${hooks.url}/callbacks/order-paid`, { method: 'POST', body: '{"order":42}' });
  assert.equal(unsigned.status, 401);
  assert.equal(deliveries.length, before + 1, 'only the rightly signed request reached the handler');
});

test('the timestamp handed over is the one the signature was checked with', async () => {
  const at = new Date(Math.floor(Date.now() / 1000) * 1000);
  const body = '{"order":42}';
  const seconds = String(at.getTime() / 1000);
  const headers = {
    'content-type': 'application/json',
    'webhook-id': 'msg_ts',
    // The library reads the leading digits, and signs over them.
    'webhook-timestamp': `${seconds}x`,
    'webhook-signature': new Webhook(server.signingSecret).sign('msg_ts', at, body),
  };
  const before = deliveries.length;
  const answer = await receiver.handle({ alias: 'order-paid', headers, body });
  assert.equal(answer.status, 200);
  assert.equal(deliveries.length, before + 1);
  assert.equal(deliveries.at(-1).timestamp.getTime(), at.getTime());
});

test('the Express handler verifies and dispatches a real delivery', async () => {
  const got = [];
  const app = express();
  const router = new Receiver({ secrets: [server.signingSecret] })
    .register('shipped', ({ body, taskId }) => { got.push({ body, taskId }); });
  // With no body parser (the handler reads the body), and behind express.raw().
  app.post('/hooks/:alias', router.expressHandler());
  app.use('/raw', express.raw({ type: '*/*' }), router.expressHandler());
  // A body parsed as JSON cannot be verified: an error for Express's error handler.
  app.post('/parsed/:alias', express.json(), router.expressHandler());
  const refused = [];
  app.use((error, req, res, next) => {
    refused.push(error.message);
    res.status(500).end();
  });
  const site = await listen(app);
  try {
    const a = await boomerang.tasks.create({ url: `${site.url}/hooks/shipped`, body: { order: 1 } });
    const b = await boomerang.tasks.create({ url: `${site.url}/raw/shipped`, body: { order: 2 } });
    await waitForStatus(boomerang, a.id, 'succeeded');
    await waitForStatus(boomerang, b.id, 'succeeded');
    assert.deepEqual(got.sort((x, y) => x.body.order - y.body.order), [
      { body: { order: 1 }, taskId: a.id },
      { body: { order: 2 }, taskId: b.id },
    ]);

    const c = await boomerang.tasks.create({ url: `${site.url}/parsed/shipped`, body: { order: 3 }, retry: { schedule: ['1s'], max_attempts: 1 } });
    const failed = await waitForStatus(boomerang, c.id, 'failed');
    assert.equal(failed.attempts[0].status_code, 500);
    assert.match(refused[0], /the body was parsed before the receiver/);
    assert.equal(got.length, 2);
  } finally {
    await site.close();
  }
});

test('Retry-After from a handler replaces the policy\'s wait', async () => {
  // A receiver of its own: Boomerang pauses the whole destination on Retry-After.
  let calls = 0;
  const own = new Receiver({ secrets: server.signingSecret }).register('later', () => {
    calls += 1;
    if (calls === 1) throw new RetryLater(2);
  });
  const site = await listen(own.nodeHandler());
  try {
    const task = await boomerang.tasks.create({ url: `${site.url}/later`, retry: { schedule: ['10s'], max_attempts: 2 } });
    const done = await waitForStatus(boomerang, task.id, 'succeeded');
    assert.deepEqual(done.attempts.map((a) => a.status_code), [503, 200]);
    // The second attempt came after the 2 s asked for, not the policy's 10 s.
    const gap = Date.parse(done.attempts[1].started_at) - Date.parse(done.attempts[0].started_at);
    assert.ok(gap >= 1900 && gap < 8000, `${gap} ms between the attempts`);
  } finally {
    await site.close();
  }
});

test('a receiver needs a secret, and an alias is one path segment with one handler', () => {
  assert.throws(() => new Receiver({ secrets: [] }), /at least one signing secret/);
  assert.throws(() => receiver.register('a/b', () => {}), /one path segment/);
  // A second handler for an alias is a mistake to see at once, not a silent replacement.
  assert.throws(() => receiver.register('order-paid', () => 'other'), /"order-paid" already has a handler/);
});

test('a body that says JSON but is not reaches the handler as text', async () => {
  const before = deliveries.length;
  const answer = await signed('/callbacks/order-paid', { body: 'order 42 paid' });
  assert.equal(answer.status, 200);
  assert.equal(deliveries.length, before + 1);
  assert.equal(deliveries.at(-1).body, 'order 42 paid');
});

test('an encoded slash is part of the alias: no handler, 404', async () => {
  const before = deliveries.length;
  assert.equal((await signed('/callbacks/x%2Forder-paid')).status, 404);
  assert.equal(deliveries.length, before);
});

test('what a handler returns is the body Boomerang checks against expect_body', async () => {
  const own = new Receiver({ secrets: server.signingSecret })
    .register('text', () => 'success')
    .register('buffer', () => Buffer.from('success'))
    .register('bytes', () => new TextEncoder().encode('success'))
    .register('json', () => ({ ok: true }))
    .register('nothing', () => {});
  const site = await listen(own.nodeHandler());
  try {
    const expecting = (alias) => boomerang.tasks.create({
      url: `${site.url}/${alias}`, expect_body: 'success', retry: { schedule: ['1s'], max_attempts: 1 },
    });
    const [text, buffer, bytes, json] = await Promise.all(['text', 'buffer', 'bytes', 'json'].map(expecting));
    for (const task of [text, buffer, bytes]) {
      const done = await waitForStatus(boomerang, task.id, 'succeeded');
      assert.equal(done.attempts[0].response, 'success');
    }
    // The JSON of an object is not the text "success": the task fails.
    await waitForStatus(boomerang, json.id, 'failed');

    const body = '{"order":42}';
    const at = new Date();
    const headers = {
      'content-type': 'application/json',
      'webhook-id': 'msg_body',
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(server.signingSecret).sign('msg_body', at, body),
    };
    const answers = Object.fromEntries(await Promise.all(['json', 'nothing', 'buffer'].map(async (alias) => {
      const response = await fetch(`${site.url}/${alias}`, { method: 'POST', headers, body });
      return [alias, { status: response.status, type: response.headers.get('content-type'), body: await response.text() }];
    })));
    assert.deepEqual(answers.json, { status: 200, type: 'application/json', body: '{"ok":true}' });
    assert.equal(answers.nothing.status, 200);
    assert.equal(answers.nothing.body, '');
    assert.deepEqual(answers.buffer, { status: 200, type: 'application/octet-stream', body: 'success' });
  } finally {
    await site.close();
  }
});
