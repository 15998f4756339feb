// Tasks, batches, schedules and errors through the client, against the real server.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ApiError, Boomerang } from 'boomerang-client';
import { startServer, waitFor } from './support.mjs';

let server;
let boomerang;
// Never called: every task here is canceled, held or far in the future.
const CALLBACK = 'https://app.example/callbacks/order-paid';

before(async () => {
  server = await startServer();
  boomerang = new Boomerang({ baseUrl: server.url, apiKey: server.apiKey });
});
after(() => server?.stop());

test('a task is registered, inspected and canceled', async () => {
  const task = await boomerang.tasks.create({
    url: CALLBACK, delay: '1h', body: { order: 42 }, key: 'order-42', metadata: { customer: 'c-17' },
  });
  assert.equal(task.status, 'scheduled');
  assert.equal(task.key, 'order-42');

  const seen = await boomerang.tasks.get(task.id);
  assert.equal(seen.id, task.id);
  assert.equal(seen.url, CALLBACK);
  assert.deepEqual(seen.metadata, { customer: 'c-17' });
  assert.ok(Date.parse(seen.next_attempt_at) > Date.now() + 50 * 60_000, seen.next_attempt_at);

  assert.equal((await boomerang.tasks.cancel(task.id)).status, 'canceled');
  assert.equal((await boomerang.tasks.get(task.id)).status, 'canceled');
  // A second cancel finds it ended: 409, as an ApiError.
  const again = await boomerang.tasks.cancel(task.id).catch((e) => e);
  assert.ok(again instanceof ApiError, String(again));
  assert.equal(again.status, 409);
});

test('a bad delay is a 422 whose ApiError names the field', async () => {
  const error = await boomerang.tasks.create({ url: CALLBACK, delay: 'soon' }).catch((e) => e);
  assert.ok(error instanceof ApiError, String(error));
  assert.equal(error.status, 422);
  assert.equal(error.field, 'delay');
  assert.equal(error.type, 'urn:boomerang:problem:invalid-field');
  assert.equal(error.title, 'A field is invalid');
  assert.match(error.detail, /soon/);
  assert.match(error.message, /^422 A field is invalid: delay/);
});

test('an unknown task is a 404', async () => {
  const error = await boomerang.tasks.get('01M00000000000000000000000').catch((e) => e);
  assert.ok(error instanceof ApiError, String(error));
  assert.equal(error.status, 404);
});

test('a wrong API key is a 401', async () => {
  const stranger = new Boomerang({ baseUrl: server.url, apiKey: 'bmr_wrong' });
  const error = await stranger.tasks.list().catch((e) => e);
  assert.ok(error instanceof ApiError, String(error));
  assert.equal(error.status, 401);
});

test('a missing API key throws when the client is built, naming BOOMERANG_API_KEY', () => {
  const saved = process.env.BOOMERANG_API_KEY;
  delete process.env.BOOMERANG_API_KEY;
  try {
    assert.throws(() => new Boomerang({ baseUrl: server.url }), /BOOMERANG_API_KEY/);
    assert.throws(() => new Boomerang({ baseUrl: server.url, apiKey: '' }), /BOOMERANG_API_KEY/);
    process.env.BOOMERANG_API_KEY = server.apiKey;
    assert.ok(new Boomerang({ baseUrl: server.url }), 'the environment\'s key is taken');
  } finally {
    if (saved === undefined) delete process.env.BOOMERANG_API_KEY;
    else process.env.BOOMERANG_API_KEY = saved;
  }
});

test('the same idempotency key registers one task', async () => {
  const first = await boomerang.tasks.create({ url: CALLBACK, delay: '1h' }, { idempotencyKey: 'sdk-ts-once' });
  const second = await boomerang.tasks.create({ url: CALLBACK, delay: '1h' }, { idempotencyKey: 'sdk-ts-once' });
  assert.equal(second.id, first.id);
  const inBody = await boomerang.tasks.create({ url: CALLBACK, delay: '1h', idempotency_key: 'sdk-ts-body' });
  assert.equal((await boomerang.tasks.create({ url: CALLBACK, delay: '1h', idempotency_key: 'sdk-ts-body' })).id, inBody.id);
  // Without a key, each call is its own registration.
  const a = await boomerang.tasks.create({ url: CALLBACK, delay: '1h' });
  const b = await boomerang.tasks.create({ url: CALLBACK, delay: '1h' });
  assert.notEqual(a.id, b.id);
});

test('a batch registers its tasks in order, and a bad one names its place', async () => {
  const result = await boomerang.tasks.createBatch([
    { url: CALLBACK, delay: '1h', key: 'batch-1' },
    { url: CALLBACK, delay: '2h', key: 'batch-2' },
    { url: CALLBACK, delay: '3h', key: 'batch-3', idempotency_key: 'sdk-ts-batch' },
  ]);
  assert.deepEqual(result.tasks.map((item) => [item.status, item.task?.key]), [[201, 'batch-1'], [201, 'batch-2'], [201, 'batch-3']]);
  // A repeat of a task with its own key is answered with the task registered first.
  const repeat = await boomerang.tasks.createBatch([{ url: CALLBACK, delay: '3h', key: 'batch-3', idempotency_key: 'sdk-ts-batch' }]);
  assert.equal(repeat.tasks[0].status, 200);
  assert.equal(repeat.tasks[0].task.id, result.tasks[2].task.id);

  const error = await boomerang.tasks.createBatch([{ url: CALLBACK }, { url: CALLBACK, delay: 'never' }]).catch((e) => e);
  assert.ok(error instanceof ApiError, String(error));
  assert.equal(error.status, 422);
  assert.equal(error.field, 'tasks[1].delay');
});

test('iterate follows next_cursor across pages', async () => {
  const created = [];
  for (let i = 0; i < 5; i++) created.push((await boomerang.tasks.create({ url: CALLBACK, delay: '1h', key: 'paged' })).id);

  const first = await boomerang.tasks.list({ key: 'paged', limit: 2 });
  assert.equal(first.tasks.length, 2);
  assert.ok(first.next_cursor, 'a first page of 2 out of 5 has a cursor');

  const seen = [];
  for await (const task of boomerang.tasks.iterate({ key: 'paged', limit: 2 })) seen.push(task.id);
  // Newest first, each once.
  assert.deepEqual(seen, [...created].reverse());
});

test('cancel by key cancels each scheduled task with the key', async () => {
  const ids = [];
  for (let i = 0; i < 2; i++) ids.push((await boomerang.tasks.create({ url: CALLBACK, delay: '1h', key: 'order-7' })).id);
  const result = await boomerang.tasks.cancelByKey('order-7');
  assert.deepEqual([...result.canceled].sort(), [...ids].sort());
  assert.deepEqual(result.not_canceled, []);
  for (const id of ids) assert.equal((await boomerang.tasks.get(id)).status, 'canceled');
});

test('a held task is released, one by id and others by key', async () => {
  const one = await boomerang.tasks.create({ url: CALLBACK, delay: '1h', hold: { timeout: '1h' } });
  assert.equal(one.status, 'held');
  assert.equal((await boomerang.tasks.release(one.id)).status, 'scheduled');
  // A repeat (as a retried call would be) answers the task as it is now.
  assert.equal((await boomerang.tasks.release(one.id)).status, 'scheduled');

  const keyed = await boomerang.tasks.create({ url: CALLBACK, delay: '1h', key: 'txn-9', hold: { timeout: '1h' } });
  const result = await boomerang.tasks.releaseByKey('txn-9');
  assert.deepEqual(result.released, [keyed.id]);
  assert.equal((await boomerang.tasks.get(keyed.id)).status, 'scheduled');
});

test('a schedule is created, listed, paused, resumed and deleted', async () => {
  const made = [];
  for (let i = 0; i < 3; i++) made.push(await boomerang.schedules.create({ url: CALLBACK, every: '1h', key: `report-${i}` }));
  assert.equal(made[0].state, 'active');
  assert.equal(made[0].every_ms, 3_600_000);

  assert.equal((await boomerang.schedules.get(made[0].id)).url, CALLBACK);
  const listed = [];
  for await (const s of boomerang.schedules.iterate({ limit: 2 })) listed.push(s.id);
  assert.deepEqual([...listed].sort(), made.map((s) => s.id).sort());

  assert.equal((await boomerang.schedules.pause(made[0].id)).state, 'paused');
  assert.equal((await boomerang.schedules.resume(made[0].id)).state, 'active');
  await boomerang.schedules.delete(made[0].id);
  const gone = await boomerang.schedules.get(made[0].id).catch((e) => e);
  assert.equal(gone.status, 404);
});

test('policies are stored, read and deleted; a bad one names its field', async () => {
  const stored = await boomerang.policies.put('payments', { schedule: ['30s', '5m'], max_attempts: 3 });
  assert.equal(stored.name, 'payments');
  assert.deepEqual((await boomerang.policies.list()).policies.map((p) => p.name), ['payments']);
  // A task names it.
  const task = await boomerang.tasks.create({ url: CALLBACK, delay: '1h', retry: 'payments' });
  assert.equal(task.retry.max_attempts, 3);

  const error = await boomerang.policies.put('bad', { schedule: ['30s'], max_attempts: 0 }).catch((e) => e);
  assert.equal(error.status, 422);
  assert.equal(error.field, 'max_attempts');
  await boomerang.policies.delete('payments');
  assert.equal((await boomerang.policies.get('payments').catch((e) => e)).status, 404);
});

test('a bulk cancel is previewed, then run as a job to its end', async () => {
  const ids = [];
  for (let i = 0; i < 3; i++) ids.push((await boomerang.tasks.create({ url: CALLBACK, delay: '1h', key: 'bulk-me' })).id);
  const preview = await boomerang.bulk.dryRun({ action: 'cancel', filter: { key: 'bulk-me' } });
  assert.equal(preview.count, 3);
  assert.deepEqual(preview.sample.map((t) => t.id).sort(), [...ids].sort());
  assert.equal((await boomerang.tasks.get(ids[0])).status, 'scheduled', 'a preview changes nothing');

  const job = await boomerang.bulk.start({ action: 'cancel', filter: { key: 'bulk-me' } });
  assert.equal(job.action, 'cancel');
  const finished = await waitFor(`bulk job ${job.id} to finish`, async () => {
    const seen = await boomerang.bulk.getJob(job.id);
    return seen.state === 'finished' ? seen : undefined;
  });
  assert.equal(finished.progress.done, 3);
  assert.ok((await boomerang.bulk.listJobs()).jobs.some((j) => j.id === job.id));
  for (const id of ids) assert.equal((await boomerang.tasks.get(id)).status, 'canceled');
});
