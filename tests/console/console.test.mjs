// The console in headless Chromium, against the real binary (`boomerang serve --dev`) and a
// real receiver on loopback. Run by scripts/console-test.sh, which installs playwright-core
// and Debian's chromium and sets BOOMERANG_BIN, BOOMERANG_NODE_MODULES and
// BOOMERANG_SCREENSHOTS.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const require = createRequire(join(process.env.BOOMERANG_NODE_MODULES, 'noop.js'));
const { chromium } = require('playwright-core');

const SHOTS = process.env.BOOMERANG_SCREENSHOTS;
const KEY = `bmr_console_${process.pid}`;
const DEADLINE_MS = 30000;
const HANG_MS = 8000;

let server;
let base;
let receiver;
let hook;
let browser;
const calls = new Map();
let healed = false;

/** The receiver: `/flaky` fails twice then succeeds; `/down` fails until healed; `/hang`
 * answers only after HANG_MS; anything under `/broken/` always fails. */
function startReceiver() {
  return new Promise((resolve) => {
    receiver = createServer((req, res) => {
      const n = (calls.get(req.url) || 0) + 1;
      calls.set(req.url, n);
      req.resume();
      if (req.url === '/hang') {
        setTimeout(() => { res.writeHead(200); res.end('late'); }, HANG_MS);
        return;
      }
      let status = 200;
      if (req.url === '/flaky' && n <= 2) status = 500;
      if (req.url === '/down' && !healed) status = 503;
      if (req.url.startsWith('/broken/')) status = 500;
      res.writeHead(status, { 'content-type': 'text/plain' });
      res.end(status === 200 ? 'ok' : 'not yet');
    });
    receiver.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${receiver.address().port}`));
  });
}

function startServer() {
  const dir = mkdtempSync(join(tmpdir(), 'boomerang-console-'));
  server = spawn(process.env.BOOMERANG_BIN, [
    'serve', '--dev', '--addr', '127.0.0.1:0', '--data-dir', join(dir, 'data'), '--api-key', KEY,
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  server.stderr.on('data', (d) => { log += d; });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${log}`)), DEADLINE_MS);
    server.stdout.on('data', (d) => {
      const m = String(d).match(/listening on (http:\/\/[0-9.:]+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
  });
}

async function call(method, path, body) {
  const response = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json().catch(() => null) };
}

async function register(body) {
  const { status, body: task } = await call('POST', '/v1/tasks', body);
  assert.equal(status, 201, JSON.stringify(task));
  return task;
}

/** Waits for a task to reach `status` (through the API), up to the deadline. */
async function settled(id, status) {
  const end = Date.now() + DEADLINE_MS;
  for (;;) {
    const { body } = await call('GET', `/v1/tasks/${id}`);
    if (body.status === status) return body;
    assert.ok(Date.now() < end, `task ${id} is ${body.status}, not ${status}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function shot(page, name) {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** A page that records every request it makes, and accepts every confirm(). */
/** What a task's page says is reported of it: its failures, and where its success goes. */
async function reported(page) {
  return page.locator('dl dt').evaluateAll((dts) => Object.fromEntries(dts
    .filter((dt) => /reported/.test(dt.textContent))
    .map((dt) => [dt.textContent, dt.nextElementSibling.textContent])));
}

async function openConsole(viewport = { width: 1280, height: 900 }) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const requested = [];
  page.on('request', (r) => requested.push(r.url()));
  page.on('dialog', (d) => d.accept());
  await page.goto(`${base}/console`);
  return { page, requested, context };
}

async function signIn(page) {
  // By keyboard: the field has focus on arrival, Enter submits.
  await page.getByLabel('API key').waitFor();
  await page.keyboard.type(KEY);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Tasks' }).waitFor();
}

before(async () => {
  hook = await startReceiver();
  base = await startServer();
  browser = await chromium.launch({
    executablePath: process.env.BOOMERANG_CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  await browser?.close();
  server?.kill();
  receiver?.close();
});

test('a wrong key is refused with the problem shown, and the right one signs in', async () => {
  const { page, context } = await openConsole();
  await page.getByLabel('API key').fill('bmr_wrong');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').filter({ hasText: 'refused' }).waitFor();
  await page.getByLabel('API key').fill(KEY);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Tasks' }).waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem('boomerang.apiKey')), KEY);
  await context.close();
});

test('tasks are listed, one opens on its timeline, and actions confirm and report', async () => {
  const flaky = await register({
    url: `${hook}/flaky`, body: { order: 42 }, key: 'order-42',
    retry: { schedule: ['1s', '1s'] }, metadata: { source: 'console-test' },
    notify: 'every',
  });
  const later = await register({ url: `${hook}/later`, delay: '1h', key: 'order-43' });
  const held = await register({
    url: `${hook}/held`, key: 'order-44', hold: { timeout: '1h' }, on_success: { url: `${hook}/done` },
  });
  const { page, requested, context } = await openConsole();
  await signIn(page);

  // Listed, newest first, with counts per state.
  const rows = page.locator('tbody tr[data-task]');
  await page.locator(`tr[data-task="${flaky.id}"]`).waitFor();
  const ids = await rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.task));
  assert.deepEqual(ids.slice(0, 3), [held.id, later.id, flaky.id]);
  await page.locator('#counts .count.held strong').filter({ hasText: '1' }).waitFor();

  // The business-key filter.
  await page.getByLabel('Business key').fill('order-43');
  await page.getByRole('button', { name: 'Show' }).click();
  await page.locator(`tr[data-task="${flaky.id}"]`).waitFor({ state: 'detached' });
  assert.deepEqual(await rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.task)), [later.id]);
  await shot(page, 'list-by-key');

  // Cancel from the list: confirmed, then shown canceled.
  await page.getByRole('button', { name: `Cancel task ${later.id}` }).click();
  await page.getByRole('alert').filter({ hasText: 'Cancel: done' }).waitFor();
  await page.locator(`tr[data-task="${later.id}"] .badge.canceled`).waitFor();
  assert.equal((await call('GET', `/v1/tasks/${later.id}`)).body.status, 'canceled');

  // The flaky task's page: two failures and a success, on the timeline and in the table.
  await page.goto(`${base}/console#/tasks/${flaky.id}`);
  await page.locator('svg.timeline g[data-outcome="succeeded"]').waitFor({ timeout: DEADLINE_MS });
  const outcomes = await page.locator('table.attempts tbody tr').evaluateAll(
    (trs) => trs.map((tr) => [tr.dataset.outcome, tr.querySelector('.status-code').textContent]));
  assert.deepEqual(outcomes, [['retrying', '500'], ['retrying', '500'], ['succeeded', '200']]);
  assert.match(await page.locator('svg.timeline').getAttribute('aria-label'), /3 attempts/);
  assert.match(await page.getByLabel('Body preview').textContent(), /"order":42/);
  await page.getByRole('heading', { name: /Task/ }).locator('.badge.succeeded').waitFor();
  assert.deepEqual(await reported(page), { 'Failures reported': 'every failed attempt' });
  await shot(page, 'task');

  // A release that lost a race (the task was canceled meanwhile): the problem is shown.
  await page.goto(`${base}/console#/tasks/${held.id}`);
  await page.getByRole('button', { name: `Release task ${held.id}` }).waitFor();
  assert.deepEqual(await reported(page),
    { 'Failures reported': 'the final one', 'Success reported to': `${hook}/done` });
  assert.equal((await call('DELETE', `/v1/tasks/${held.id}`)).status, 200);
  await page.getByRole('button', { name: `Release task ${held.id}` }).click();
  await page.getByRole('alert').filter({ hasText: 'Release refused: 409' }).waitFor();
  await page.getByRole('heading', { name: /Task/ }).locator('.badge.canceled').waitFor();

  // The live panel counted the deliveries.
  await page.reload();
  await page.locator('#live figcaption').filter({ hasText: /Last hour: [1-9]\d* attempts/ }).waitFor();

  const foreign = requested.filter((url) => !url.startsWith(`${base}/`));
  assert.deepEqual(foreign, [], 'the console calls only its own origin');
  await context.close();
});

test('failed tasks are redriven in bulk and succeed', async () => {
  const down = await register({ url: `${hook}/down`, retry: { schedule: ['1s'] } });
  await settled(down.id, 'failed');
  const { page, requested, context } = await openConsole();
  await signIn(page);
  await page.getByRole('link', { name: 'Failed', exact: true }).click();
  await page.locator(`tr[data-task="${down.id}"] .badge.failed`).waitFor();
  await shot(page, 'failed');
  healed = true;
  await page.getByRole('button', { name: /Retry all shown/ }).click();
  await page.getByRole('alert').filter({ hasText: /Retried [1-9]\d* of/ }).waitFor();
  // Watch it: the task page follows the redriven task until it succeeds.
  await page.goto(`${base}/console#/tasks/${down.id}`);
  await page.getByRole('heading', { name: /Task/ }).locator('.badge.succeeded')
    .waitFor({ timeout: DEADLINE_MS });
  const outcomes = await page.locator('table.attempts tbody tr').evaluateAll(
    (trs) => trs.map((tr) => tr.dataset.outcome));
  assert.deepEqual(outcomes, ['retrying', 'failed', 'succeeded']);
  assert.deepEqual(requested.filter((url) => !url.startsWith(`${base}/`)), []);
  await context.close();
});

test('the list pages through its cursors, forward and back', async () => {
  const tasks = Array.from({ length: 27 }, (_, i) => ({ url: `${hook}/page/${i}`, delay: '1h', key: 'bulk' }));
  const { status, body } = await call('POST', '/v1/tasks/batch', { tasks });
  assert.equal(status, 200, JSON.stringify(body));
  const { page, context } = await openConsole();
  await signIn(page);
  await page.goto(`${base}/console#/tasks?key=bulk`);
  const rows = page.locator('tbody tr[data-task]');
  const ids = () => rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.task));
  await page.getByRole('button', { name: 'Next →' }).waitFor();
  const first = await ids();
  assert.equal(first.length, 25);
  await page.getByRole('button', { name: 'Next →' }).click();
  await page.getByRole('button', { name: '← Previous' }).waitFor();
  const second = await ids();
  assert.equal(second.length, 2);
  assert.equal(new Set([...first, ...second]).size, 27, 'each task once, across the pages');
  assert.equal(await page.getByRole('button', { name: 'Next →' }).count(), 0);
  await page.getByRole('button', { name: '← Previous' }).click();
  await page.getByRole('button', { name: 'Next →' }).waitFor();
  assert.deepEqual(await ids(), first);
  await context.close();
});

test('a paused flow is listed with its waiting task, and resuming it sends the task', async () => {
  const key = 'console flow/eu';
  const path = `/v1/flows/${encodeURIComponent(key)}`;
  assert.equal((await call('POST', `${path}/pause`)).status, 200);
  const task = await register({ url: `${hook}/flowed`, flow: { key, parallelism: 1 } });
  const end = Date.now() + DEADLINE_MS;
  while ((await call('GET', path)).body.waiting !== 1) {
    assert.ok(Date.now() < end, 'the task never waited in its flow');
    await new Promise((r) => setTimeout(r, 100));
  }
  const { page, requested, context } = await openConsole();
  await signIn(page);
  await page.getByRole('link', { name: 'Flows', exact: true }).click();
  const row = page.locator(`tr[data-flow="${key}"]`);
  await row.locator('.badge', { hasText: 'paused' }).waitFor();
  assert.deepEqual(await row.locator('td').evaluateAll((tds) => tds.slice(0, 4).map((td) => td.textContent)),
    [key, 'paused', '1', '0']);
  assert.equal(calls.get('/flowed') || 0, 0, 'a paused flow calls nothing');
  await shot(page, 'flows');
  await page.getByRole('button', { name: `Resume flow ${key}` }).click();
  await page.getByRole('alert').filter({ hasText: 'Resume: done' }).waitFor();
  await settled(task.id, 'succeeded');
  assert.equal((await call('GET', path)).body.paused, false);
  // Any flow can be paused by its key, busy or not.
  await page.getByLabel('Flow key').fill('idle-flow');
  await page.getByRole('button', { name: 'Pause flow', exact: true }).click();
  await page.locator('tr[data-flow="idle-flow"] .badge', { hasText: 'paused' }).waitFor();
  assert.equal((await call('POST', '/v1/flows/idle-flow/resume')).status, 200);
  assert.deepEqual(requested.filter((url) => !url.startsWith(`${base}/`)), []);
  await context.close();
});

test('a breaker opened by hand is listed with no probe, and closed from its row', async () => {
  const { page, requested, context } = await openConsole();
  await signIn(page);
  await page.getByRole('link', { name: 'Breakers', exact: true }).click();
  await page.getByText('No breaker is open.').waitFor();
  await page.getByLabel('Destination URL').fill(`${hook}/any/path`);
  await page.getByRole('button', { name: 'Open breaker', exact: true }).click();
  await page.getByRole('alert').filter({ hasText: 'Open: done' }).waitFor();
  const row = page.locator(`tr[data-breaker="${hook}"]`);
  await row.locator('.badge', { hasText: 'open by hand' }).waitFor();
  assert.equal(await row.locator('td').nth(3).textContent(), 'none until closed');
  const { body } = await call('GET', '/v1/breakers');
  assert.deepEqual(body.open.map((b) => [b.destination, b.by_hand]), [[hook, true]]);
  await shot(page, 'breakers');
  await page.getByRole('button', { name: `Close breaker ${hook}` }).click();
  await page.getByRole('alert').filter({ hasText: 'Close: done' }).waitFor();
  await row.waitFor({ state: 'detached' });
  assert.deepEqual((await call('GET', '/v1/breakers')).body.open, []);
  assert.deepEqual(requested.filter((url) => !url.startsWith(`${base}/`)), []);
  await context.close();
});

test('a bulk retry is previewed, refused an empty filter, started, and followed to its end', async () => {
  const failing = [];
  for (let i = 0; i < 3; i += 1) {
    failing.push(await register({ url: `${hook}/broken/${i}`, retry: { max_attempts: 1 } }));
  }
  for (const task of failing) await settled(task.id, 'failed');
  const { page, requested, context } = await openConsole();
  const dialogs = [];
  page.on('dialog', (d) => dialogs.push(d.message()));
  await signIn(page);
  await page.getByRole('link', { name: 'Bulk jobs', exact: true }).click();
  await page.getByRole('heading', { name: 'Bulk jobs' }).waitFor();
  await page.getByText('No bulk job yet.').waitFor();

  // An empty filter would take every failed task: refused, naming the field.
  await page.getByRole('button', { name: 'Preview', exact: true }).click();
  await page.getByRole('alert').filter({ hasText: /Preview refused: 422: filter: / }).waitFor();

  // The preview counts the tasks under the prefix and lists them.
  await page.getByLabel('Action', { exact: true }).selectOption('retry');
  await page.getByLabel('URL prefix').fill(`${hook}/broken/`);
  await page.getByRole('button', { name: 'Preview', exact: true }).click();
  await page.locator('#bulk-preview .preview-count').filter({ hasText: /^3$/ }).waitFor();
  const sample = await page.locator('#bulk-preview li[data-task]').evaluateAll(
    (lis) => lis.map((li) => li.dataset.task));
  assert.deepEqual([...sample].sort(), failing.map((t) => t.id).sort());
  assert.equal(await page.locator('#notice').textContent(), '', 'the refusal was cleared');

  // Started after a confirmation that repeats the count; followed until it has finished.
  await page.getByRole('button', { name: 'Start', exact: true }).click();
  await page.getByRole('alert').filter({ hasText: 'Start: done' }).waitFor();
  assert.equal(dialogs.length, 1);
  assert.match(dialogs[0], /^Start a bulk retry of the tasks that match url_prefix=/);
  assert.match(dialogs[0], /The preview found 3 tasks/);
  const row = page.locator('#bulk-jobs tr[data-job][data-state="finished"]');
  await row.waitFor({ timeout: DEADLINE_MS });
  const cells = await row.locator('td').evaluateAll((tds) => tds.slice(1, 7).map((td) => td.textContent));
  assert.deepEqual(cells, ['retry', 'finished', cells[2], '3', '3', '0']);
  assert.ok(Number(cells[2]) >= 3, `read ${cells[2]}`);
  const { body } = await call('GET', '/v1/bulk-jobs');
  assert.equal(body.jobs.length, 1);
  assert.equal(await row.getAttribute('data-job'), body.jobs[0].id);
  assert.deepEqual(body.jobs[0].filter, { url_prefix: `${hook}/broken/` });
  // Each task was retried: called once more.
  const end = Date.now() + DEADLINE_MS;
  while (failing.some((_, i) => (calls.get(`/broken/${i}`) || 0) < 2)) {
    assert.ok(Date.now() < end, 'the retried tasks were not called again');
    await new Promise((r) => setTimeout(r, 100));
  }
  await shot(page, 'bulk');
  assert.deepEqual(requested.filter((url) => !url.startsWith(`${base}/`)), []);
  await context.close();
});

test('a schedule is listed with its recurrence, and paused and deleted from its row', async () => {
  const { status, body: sch } = await call('POST', '/v1/schedules',
    { cron: '0 9 * * MON-FRI', timezone: 'Europe/Paris', url: `${hook}/daily` });
  assert.equal(status, 201, JSON.stringify(sch));
  const { page, requested, context } = await openConsole();
  await signIn(page);
  await page.getByRole('link', { name: 'Schedules', exact: true }).click();
  const row = page.locator(`tr[data-schedule="${sch.id}"]`);
  await row.locator('.badge', { hasText: 'active' }).waitFor();
  assert.deepEqual(await row.locator('td').evaluateAll((tds) => [tds[2].textContent, tds[4].textContent]),
    ['0 9 * * MON-FRI (Europe/Paris)', `${hook}/daily`]);
  await shot(page, 'schedules');
  await page.getByRole('button', { name: `Pause schedule ${sch.id}` }).click();
  await page.getByRole('alert').filter({ hasText: 'Pause: done' }).waitFor();
  await row.locator('.badge', { hasText: 'paused' }).waitFor();
  assert.equal((await call('GET', `/v1/schedules/${sch.id}`)).body.state, 'paused');
  await page.getByRole('button', { name: `Delete schedule ${sch.id}` }).click();
  await page.getByRole('alert').filter({ hasText: 'Delete: done' }).waitFor();
  await row.waitFor({ state: 'detached' });
  assert.equal((await call('GET', `/v1/schedules/${sch.id}`)).status, 404);
  assert.deepEqual(requested.filter((url) => !url.startsWith(`${base}/`)), []);
  await context.close();
});

test('a busy destination shows its calls in flight of its limit', async () => {
  await register({ url: `${hook}/hang` });
  const end = Date.now() + DEADLINE_MS;
  while (!calls.get('/hang')) {
    assert.ok(Date.now() < end, 'the call never arrived');
    await new Promise((r) => setTimeout(r, 50));
  }
  const { page, context } = await openConsole();
  await signIn(page);
  const row = page.locator(`#destinations tr[data-destination="${hook}"]`);
  await row.waitFor();
  assert.deepEqual(await row.locator('td').evaluateAll((tds) => tds.slice(1, 3).map((td) => td.textContent)),
    ['1 of 16', '0']);
  await shot(page, 'destinations');
  await context.close();
});

/** What a task's page says of its order key. */
async function orderShown(page) {
  return page.locator('dl dt').evaluateAll((dts) => Object.fromEntries(dts
    .filter((dt) => /^(Order key|Place in its key)$/.test(dt.textContent))
    .map((dt) => [dt.textContent, dt.nextElementSibling.textContent])));
}

// After the bulk test: its preview counts the failed tasks under /broken/.
test('an order key blocked by its failed head is listed, and a key is shown as text', async () => {
  const key = `console-order-${process.pid}`;
  const first = await register({ url: `${hook}/broken/order/1`, retry: { max_attempts: 1 }, order_key: key });
  const second = await register({ url: `${hook}/broken/order/2`, retry: { max_attempts: 1 }, order_key: key });
  const markup = '<b>x</b>';
  const quiet = await register({ url: `${hook}/later`, delay: '1h', order_key: markup });
  await settled(first.id, 'failed');
  const { body: line } = await call('GET', `/v1/order-keys/${encodeURIComponent(key)}`);
  assert.deepEqual([line.backlog, line.head.task_id, line.head.blocked], [2, first.id, true]);
  const { page, requested, context } = await openConsole();
  await signIn(page);
  await page.getByRole('link', { name: 'Order keys', exact: true }).click();
  await page.getByRole('heading', { name: 'Order keys' }).waitFor();
  const row = page.locator(`tr[data-order-key="${key}"]`);
  await row.locator('.badge', { hasText: 'blocked' }).waitFor();
  assert.equal(await row.getAttribute('data-blocked'), 'true');
  assert.deepEqual(await row.locator('td').evaluateAll((tds) => tds.slice(0, 6).map((td) => td.textContent)),
    [key, '2', first.id.slice(-8), String(line.head.place), 'failed', 'blocked']);
  // The second waits its turn: never called.
  assert.equal(calls.get('/broken/order/2') || 0, 0);
  assert.equal((await call('GET', `/v1/tasks/${second.id}`)).body.status, 'scheduled');

  // A key is the user's text: shown as written, never parsed as HTML.
  const marked = page.locator(`tr[data-order-key="${markup}"]`);
  await marked.waitFor();
  assert.equal(await marked.locator('td').first().textContent(), markup);
  assert.equal(await marked.locator('td').nth(1).textContent(), '1');
  assert.equal(await marked.getAttribute('data-blocked'), 'false');
  assert.equal(await page.locator('main b').count(), 0, 'no <b> element was made');
  await shot(page, 'order-keys');

  // The head links to its task, whose page shows its key and place.
  await row.getByRole('link', { name: first.id.slice(-8) }).click();
  await page.getByRole('heading', { name: /Task/ }).locator('.badge.failed').waitFor();
  assert.deepEqual(await orderShown(page), { 'Order key': key, 'Place in its key': String(line.head.place) });
  await page.goto(`${base}/console#/tasks/${quiet.id}`);
  // The quiet task's own page, not the head's still shown while it loads.
  await page.locator('dl dd', { hasText: markup }).waitFor();
  assert.equal((await orderShown(page))['Order key'], markup);
  assert.equal(await page.locator('main b').count(), 0);

  // Canceled, the blocked head lets the next task go.
  assert.equal((await call('DELETE', `/v1/tasks/${first.id}`)).status, 200);
  await settled(second.id, 'failed');
  assert.deepEqual(requested.filter((url) => !url.startsWith(`${base}/`)), []);
  await context.close();
});

test('at phone width nothing overflows sideways', async () => {
  const { page, context } = await openConsole({ width: 390, height: 844 });
  await signIn(page);
  const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(await overflow() <= 1, 'the list fits');
  await shot(page, 'list-phone');
  const first = await page.locator('tbody tr[data-task] a').first().getAttribute('href');
  await page.goto(`${base}/console${first}`);
  await page.locator('svg.timeline').waitFor();
  assert.ok(await overflow() <= 1, 'the task fits');
  await shot(page, 'task-phone');
  await context.close();
});
