// What the tests share: the real `boomerang serve` on a free loopback port with a fresh
// data directory, real HTTP receivers on loopback, and waiting with a deadline.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const BIN = process.env.BOOMERANG_BIN ?? resolve(packageDir, '../../target/debug/boomerang');
export const DEADLINE_MS = 20_000;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Polls `check` until it returns something other than undefined/false, or throws after
 * the deadline with the last value seen (or the last error) in the message.
 */
export async function waitFor(what, check, { timeoutMs = DEADLINE_MS, everyMs = 50 } = {}) {
  const end = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await check();
      if (last !== undefined && last !== false) return last;
    } catch (error) {
      last = error;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; last: ${last instanceof Error ? last.stack : JSON.stringify(last)}`);
    await sleep(everyMs);
  }
}

/**
 * Starts `boomerang serve --dev` on a port of its own choosing and a fresh data directory,
 * and waits until `/readyz` answers 200. Returns its URL, API key and signing secret, and
 * `stop()`.
 */
export async function startServer(extraArgs = []) {
  const dir = mkdtempSync(join(tmpdir(), 'boomerang-sdk-ts-'));
  const child = spawn(BIN, ['serve', '--dev', '--addr', '127.0.0.1:0', '--data-dir', join(dir, 'data'), ...extraArgs], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => { output += d; });
  child.stderr.on('data', (d) => { output += d; });
  const exited = new Promise((r) => child.once('exit', r));
  const stop = async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const url = await waitFor('the server to print its address', () => {
      if (child.exitCode !== null) throw new Error(`serve exited ${child.exitCode}: ${output}`);
      return output.match(/listening on (http:\/\/[0-9.:]+)/)?.[1];
    });
    await waitFor('/readyz', async () => (await fetch(`${url}/readyz`)).status === 200);
    const credentials = JSON.parse(readFileSync(join(dir, 'data', 'credentials.json'), 'utf8'));
    return { url, apiKey: credentials.api_key, signingSecret: credentials.signing_secret, stop, output: () => output };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Listens on a free loopback port with `handler`; returns its base URL and `close()`. */
export async function listen(handler) {
  const server = createServer(handler);
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    server,
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }),
  };
}

/** Waits until the task is `status`, or has ended in another (which fails the test at once). */
export async function waitForStatus(client, id, status) {
  const task = await waitFor(`task ${id} to be ${status}`, async () => {
    const t = await client.tasks.get(id);
    return t.status === status || ['succeeded', 'failed', 'canceled'].includes(t.status) ? t : undefined;
  });
  if (task.status !== status) {
    throw new Error(`task ${id} ended ${task.status}, not ${status}: ${JSON.stringify(task.attempts)}`);
  }
  return task;
}
