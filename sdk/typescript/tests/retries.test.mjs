// The client's retries, through a fault-injecting proxy on loopback in front of the real
// server: a lost answer, 503 and 429 with Retry-After, and calls that must not be repeated.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, beforeEach, test } from 'node:test';
import { ApiError, Boomerang } from 'boomerang-client';
import { listen, startServer } from './support.mjs';

let server;
let proxy;
/** What the proxy saw: method, path, and the Idempotency-Key header. */
let seen = [];
/** How the proxy treats the next requests, in turn; `forward` once they run out. */
let faults = [];

/** Sends the request on to the server; resolves with its status, headers and body. */
function forward(req, body) {
  const target = new URL(req.url, server.url);
  return new Promise((resolve, reject) => {
    const out = httpRequest(target, { method: req.method, headers: { ...req.headers, host: target.host } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    out.on('error', reject);
    out.end(body);
  });
}

/** The proxy: records each request, then plays the next fault, or forwards it. */
async function relay(req, res) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const body = Buffer.concat(chunks);
  seen.push({ method: req.method, path: req.url, key: req.headers['idempotency-key'], body: body.toString() });
  const fault = faults.shift() ?? 'forward';
  if (fault === 'lose-answer') {
    // The server does the work; the client never hears of it.
    await forward(req, body);
    req.socket.destroy();
  } else if (typeof fault === 'object') {
    const retryAfter = fault.retryAfter ? { 'retry-after': fault.retryAfter } : {};
    res.writeHead(fault.status, { 'content-type': 'application/problem+json', ...retryAfter });
    res.end(JSON.stringify({ type: 'about:blank', title: 'Injected', status: fault.status, detail: 'by the test proxy' }));
  } else {
    const answer = await forward(req, body);
    res.writeHead(answer.status, answer.headers);
    res.end(answer.body);
  }
}

before(async () => {
  server = await startServer();
  proxy = await listen((req, res) => {
    relay(req, res).catch((error) => {
      // A broken proxy must fail the test that met it, not hang it.
      console.error('proxy:', error);
      res.destroy();
    });
  });
});
after(async () => {
  await proxy?.close();
  await server?.stop();
});
beforeEach(() => {
  seen = [];
  faults = [];
});

/** A client through the proxy, with short backoffs. */
const client = (retry = {}) => new Boomerang({ baseUrl: proxy.url, apiKey: server.apiKey, retry: { initialDelayMs: 10, ...retry } });
const CALLBACK = 'https://app.example/callbacks/retried';

test('a registration whose answer was lost is retried with the same key and stored once', async () => {
  faults = ['lose-answer'];
  const task = await client().tasks.create({ url: CALLBACK, delay: '1h', key: 'lost-answer' });
  assert.equal(seen.length, 2);
  assert.ok(seen[0].key, 'the client gave the registration an idempotency key');
  assert.equal(seen[1].key, seen[0].key);
  const stored = await new Boomerang({ baseUrl: server.url, apiKey: server.apiKey }).tasks.list({ key: 'lost-answer' });
  assert.deepEqual(stored.tasks.map((t) => t.id), [task.id]);
});

test('each registration has a key of its own: two calls are two tasks', async () => {
  const first = await client().tasks.create({ url: CALLBACK, delay: '1h', key: 'two-calls' });
  const second = await client().tasks.create({ url: CALLBACK, delay: '1h', key: 'two-calls' });
  assert.equal(seen.length, 2);
  assert.ok(seen[0].key && seen[1].key);
  assert.notEqual(seen[1].key, seen[0].key);
  assert.notEqual(second.id, first.id);
});

test('a registration that replaces by key goes without an idempotency key, and once', async () => {
  // The server refuses an idempotency key with `on_key: replace`; a repeat would replace again.
  const task = { url: CALLBACK, delay: '1h', key: 'replaced', on_key: 'replace' };
  const first = await client().tasks.create(task);
  const second = await client().tasks.create({ ...task, delay: '2h' });
  assert.equal(second.id, first.id, 'the second registration replaced the first');
  assert.deepEqual(seen.map((s) => s.key), [undefined, undefined]);

  seen = [];
  faults = [{ status: 503 }];
  const error = await client().tasks.create(task).catch((e) => e);
  assert.equal(error.status, 503);
  assert.equal(seen.length, 1);
});

test('a batch whose answer was lost is stored once: each task carries its own key', async () => {
  faults = ['lose-answer'];
  const result = await client().tasks.createBatch([{ url: CALLBACK, delay: '1h', key: 'lost-batch' }, { url: CALLBACK, delay: '1h', key: 'lost-batch' }]);
  assert.deepEqual(result.tasks.map((t) => t.status), [200, 200], 'the retry found both tasks registered');
  assert.equal(seen.length, 2);
  assert.equal(seen[1].body, seen[0].body);
  const stored = await new Boomerang({ baseUrl: server.url, apiKey: server.apiKey }).tasks.list({ key: 'lost-batch' });
  assert.equal(stored.tasks.length, 2);
});

test('503 and 429 are retried after Retry-After', async () => {
  faults = [{ status: 503, retryAfter: '1' }, { status: 429, retryAfter: '0' }];
  const started = Date.now();
  const page = await client().tasks.list();
  assert.ok(Array.isArray(page.tasks));
  assert.equal(seen.length, 3);
  assert.ok(Date.now() - started >= 950, 'waited the second asked for');
});

test('retries are bounded, and the last answer is thrown', async () => {
  faults = Array(5).fill({ status: 503 });
  const error = await client({ attempts: 3 }).tasks.list().catch((e) => e);
  assert.ok(error instanceof ApiError, String(error));
  assert.equal(error.status, 503);
  assert.equal(error.detail, 'by the test proxy');
  assert.equal(seen.length, 3);
});

test('a Retry-After longer than the client waits for is passed on', async () => {
  faults = [{ status: 429, retryAfter: '3600' }];
  const error = await client().tasks.list().catch((e) => e);
  assert.equal(error.status, 429);
  assert.equal(error.retryAfter, 3600);
  assert.equal(seen.length, 1);
});

test('a call that is not safe to repeat is made once', async () => {
  faults = [{ status: 503 }];
  const error = await client().schedules.create({ url: CALLBACK, every: '1h' }).catch((e) => e);
  assert.equal(error.status, 503);
  assert.equal(seen.length, 1);
  assert.equal((await client().schedules.list()).schedules.length, 0);
});

test('retry: false makes every call once', async () => {
  faults = [{ status: 503 }];
  const error = await new Boomerang({ baseUrl: proxy.url, apiKey: server.apiKey, retry: false }).tasks.list().catch((e) => e);
  assert.equal(error.status, 503);
  assert.equal(seen.length, 1);
});

test('a connection refused is retried, then thrown', async () => {
  const closed = await listen(() => {});
  const url = closed.url;
  await closed.close();
  const error = await new Boomerang({ baseUrl: url, apiKey: server.apiKey, retry: { attempts: 2, initialDelayMs: 10 } })
    .tasks.list().catch((e) => e);
  assert.ok(error instanceof TypeError, String(error));
  assert.equal(error.cause?.code, 'ECONNREFUSED');
});
