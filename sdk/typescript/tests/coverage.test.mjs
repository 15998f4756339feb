// Every operation of the OpenAPI document has a client method: each method below is called
// against the real server, and the request it sent must be the operation's method and path.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import { Boomerang } from 'boomerang-client';
import { BIN, startServer } from './support.mjs';

/** The console's page and its files are for a browser, not for a client. */
const NOT_FOR_CLIENTS = new Set(['console', 'console_file']);

const ID = '01M00000000000000000000000';
const DEST = 'https://hooks.example.com';

/** operationId → a call of the client method for it. */
const CALLS = {
  healthz: (b) => b.healthz(),
  readyz: (b) => b.readyz(),
  openapi: (b) => b.openapi(),
  metrics: (b) => b.metrics(),
  stats: (b) => b.stats(),
  create_task: (b) => b.tasks.create({ url: `${DEST}/x`, delay: '1h' }),
  create_tasks: (b) => b.tasks.createBatch([{ url: `${DEST}/x`, delay: '1h' }]),
  get_task: (b) => b.tasks.get(ID),
  list_tasks: (b) => b.tasks.list({ limit: 1 }),
  cancel_task: (b) => b.tasks.cancel(ID),
  cancel_by_key: (b) => b.tasks.cancelByKey('k'),
  retry_task: (b) => b.tasks.retry(ID),
  release_task: (b) => b.tasks.release(ID),
  release_by_key: (b) => b.tasks.releaseByKey('k'),
  bulk_action: (b) => b.bulk.dryRun({ action: 'cancel', filter: { key: 'k' } }),
  list_bulk_jobs: (b) => b.bulk.listJobs(),
  get_bulk_job: (b) => b.bulk.getJob(ID),
  create_schedule: (b) => b.schedules.create({ url: `${DEST}/x`, every: '1h' }),
  list_schedules: (b) => b.schedules.list(),
  get_schedule: (b) => b.schedules.get(ID),
  delete_schedule: (b) => b.schedules.delete(ID),
  pause_schedule: (b) => b.schedules.pause(ID),
  resume_schedule: (b) => b.schedules.resume(ID),
  list_policies: (b) => b.policies.list(),
  get_policy: (b) => b.policies.get('p'),
  put_policy: (b) => b.policies.put('p', { schedule: ['1m'] }),
  delete_policy: (b) => b.policies.delete('p'),
  list_templates: (b) => b.templates.list(),
  get_template: (b) => b.templates.get('t'),
  put_template: (b) => b.templates.put('t', { timeout: '5s' }),
  delete_template: (b) => b.templates.delete('t'),
  list_flows: (b) => b.flows.list(),
  get_flow: (b) => b.flows.get('partner/eu'),
  pause_flow: (b) => b.flows.pause('f'),
  resume_flow: (b) => b.flows.resume('f'),
  list_breakers: (b) => b.breakers.list(),
  open_breaker: (b) => b.breakers.open(DEST),
  close_breaker: (b) => b.breakers.close(DEST),
  put_breaker_settings: (b) => b.breakers.putSettings({ failures: 5 }),
  list_order_keys: (b) => b.orderKeys.list(),
  get_order_key: (b) => b.orderKeys.get('k'),
  list_signing_secrets: (b) => b.signingSecrets.list(),
  rotate_signing_secret: (b) => b.signingSecrets.rotate({ grace_period: '1h' }),
  retire_signing_secret: (b) => b.signingSecrets.retire('0000000000000000'),
};

let server;
before(async () => { server = await startServer(); });
after(() => server?.stop());

const document = JSON.parse(execFileSync(BIN, ['openapi'], { encoding: 'utf8' }));
const operations = Object.entries(document.paths).flatMap(([path, item]) => Object.entries(item)
  .filter(([method]) => ['get', 'put', 'post', 'delete', 'patch'].includes(method))
  .map(([method, op]) => ({ id: op.operationId, method: method.toUpperCase(), path })));

test('the client covers every operation of the document', () => {
  const wanted = operations.map((op) => op.id).filter((id) => !NOT_FOR_CLIENTS.has(id)).sort();
  assert.deepEqual(Object.keys(CALLS).sort(), wanted);
});

for (const op of operations.filter((o) => !NOT_FOR_CLIENTS.has(o.id))) {
  test(`${op.id} is ${op.method} ${op.path}`, async () => {
    const sent = [];
    const boomerang = new Boomerang({
      baseUrl: server.url,
      apiKey: server.apiKey,
      retry: false,
      fetch: (request) => {
        sent.push({ method: request.method, path: new URL(request.url).pathname });
        return fetch(request);
      },
    });
    // The call may well be refused (404, 409, 422): what counts is the request it made.
    await CALLS[op.id]?.(boomerang).catch(() => {});
    const template = op.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+');
    const pattern = new RegExp(`^${template}$`);
    assert.equal(sent.length, 1, JSON.stringify(sent));
    assert.equal(sent[0].method, op.method);
    assert.match(sent[0].path, pattern);
  });
}
