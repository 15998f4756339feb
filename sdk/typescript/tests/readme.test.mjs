// The README's examples, taken from README.md as they are written and run against the
// real server: the quick start, and the Express receiver taking a real delivery.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Boomerang } from 'boomerang-client';
import { packageDir, startServer, waitFor, waitForStatus } from './support.mjs';

const readme = readFileSync(join(packageDir, 'README.md'), 'utf8');

/** The code block after `<!-- example: name -->`. */
function example(name) {
  const found = readme.match(new RegExp(`<!-- example: ${name} -->\\n\`\`\`js\\n([\\s\\S]*?)\`\`\``));
  assert.ok(found, `README.md has no example ${name}`);
  return found[1];
}

/**
 * Runs `code` as a module of its own inside the package (so that `boomerang-client` and
 * `express` resolve as in an application); returns the child and its collected output.
 */
function run(name, code, env) {
  const file = join(packageDir, 'tests', `.readme-${name}-${process.pid}.mjs`);
  writeFileSync(file, code);
  const child = spawn(process.execPath, [file], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (d) => { out.stdout += d; });
  child.stderr.on('data', (d) => { out.stderr += d; });
  const exited = new Promise((resolve) => child.once('exit', (code) => { rmSync(file, { force: true }); resolve(code); }));
  return { child, out, exited };
}

/** A port free now (the receiver example listens on $PORT). */
async function freePort() {
  const probe = createServer();
  await new Promise((r) => probe.listen(0, '127.0.0.1', r));
  const { port } = probe.address();
  await new Promise((r) => probe.close(r));
  return port;
}

let server;
let boomerang;
before(async () => {
  server = await startServer();
  boomerang = new Boomerang({ baseUrl: server.url, apiKey: server.apiKey });
});
after(() => server?.stop());

test('the quick start registers a task and reads it back', async () => {
  const code = example('quickstart');
  assert.equal(code.trim().split('\n').filter((line) => line.trim()).length, 5, 'five lines');
  const { out, exited } = run('quickstart', code, { BOOMERANG_URL: server.url, BOOMERANG_API_KEY: server.apiKey });
  assert.equal(await exited, 0, out.stderr);
  const [first, second] = out.stdout.trim().split('\n');
  const [id, status, next] = first.split(' ');
  assert.equal(status, 'scheduled');
  assert.equal(second, 'scheduled');
  const due = Date.parse(next) - Date.now();
  assert.ok(due > 4 * 60_000 && due <= 5 * 60_000, `due in ${due} ms`);
  const task = await boomerang.tasks.get(id);
  assert.equal(task.url, 'https://app.example/callbacks/order-paid');
  assert.equal(task.body_bytes, '{"order":42}'.length);
});

test('the receiver example verifies and handles a real delivery', async () => {
  const port = await freePort();
  const { child, out, exited } = run('receiver', example('receiver'), {
    BOOMERANG_SIGNING_SECRET: server.signingSecret, PORT: String(port),
  });
  try {
    const hook = `http://127.0.0.1:${port}/callbacks/order-paid`;
    // Up once it answers; and an unsigned request is refused.
    const status = await waitFor('the receiver example to listen', async () => {
      if (child.exitCode !== null) throw new Error(`exited: ${out.stderr}`);
      return (await fetch(hook, { method: 'POST', body: '{"order":1}' })).status;
    });
    assert.equal(status, 401);

    const task = await boomerang.tasks.create({ url: hook, body: { order: 42 } });
    await waitForStatus(boomerang, task.id, 'succeeded');
    await waitFor('the handler\'s line', () => out.stdout.includes(`order 42 paid (task ${task.id}, attempt 1)`));
    assert.doesNotMatch(out.stdout, /order 1 paid/);
  } finally {
    child.kill();
    await exited;
  }
});
