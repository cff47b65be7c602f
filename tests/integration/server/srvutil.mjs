// SPDX-License-Identifier: Apache-2.0
//
// srvutil.mjs: what the compute server's Node tests share: a temp folder,
// the real S3 server (tests/harness/s3server.js, s3rver 3 with the harness's
// bucket), the real `ringcache server` started with --port 0 --port-file and
// waited for, a graceful stop that requires exit 0 after SIGTERM, and a
// cleanup that kills whatever is still running and removes the folder on any
// exit (pass, failure, exception). Skips exit 77 with the reason.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const srcDir = process.env.RINGCACHE_SOURCE_DIR || path.resolve(here, '../../..');
export const buildDir = process.env.RINGCACHE_BUILD_DIR || path.join(srcDir, 'build/release');
export const nodeModules = process.env.RINGCACHE_NODE_MODULES || path.join(srcDir, 'node_modules');
export const ringcache = path.join(buildDir, 'ingest/cli/ringcache');

const children = new Set();
let tmp = null;

export function skip(why) {
  process.stderr.write(`SKIP: ${why}\n`);
  process.exit(77);
}

function cleanup() {
  for (const c of children) {
    try { process.kill(c.pid, 'SIGKILL'); } catch { /* gone */ }
  }
  children.clear();
  if (tmp && !process.env.RINGCACHE_TEST_KEEP) fs.rmSync(tmp, { recursive: true, force: true });
}
process.on('exit', cleanup);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { cleanup(); process.exit(130); });
process.on('uncaughtException', (e) => { console.error(e); cleanup(); process.exit(1); });
process.on('unhandledRejection', (e) => { console.error(e); cleanup(); process.exit(1); });

export function tempDir(name) {
  const base = process.env.RINGCACHE_TEST_TMP || os.tmpdir();
  tmp = fs.mkdtempSync(path.join(base, `${name}.`));
  return tmp;
}

export async function requireClient() {
  try {
    return await import(path.join(nodeModules, '@clickhouse/client/dist/index.js'));
  } catch (e) {
    skip(`@clickhouse/client is not in ${nodeModules} (run npm ci): ${e.message}`);
  }
  return null;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitPortFile(file, proc, name, log) {
  const t0 = Date.now();
  while (Date.now() - t0 < 20000) {
    if (proc.exitCode !== null) {
      throw new Error(`${name} exited with ${proc.exitCode} before it was ready:\n${tail(log)}`);
    }
    try {
      const p = parseInt(fs.readFileSync(file, 'utf8'), 10);
      if (p > 0) return p;
    } catch { /* not yet */ }
    await sleep(20);
  }
  throw new Error(`${name} did not write ${file} within 20 s:\n${tail(log)}`);
}

export function tail(file, n = 30) {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').slice(-n).join('\n');
  } catch {
    return '';
  }
}

function start(name, cmd, args, env) {
  const log = path.join(tmp, `${name}.log`);
  const fd = fs.openSync(log, 'a');
  const proc = spawn(cmd, args, { cwd: tmp, env: { ...process.env, ...env }, stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  children.add(proc);
  proc.on('exit', () => children.delete(proc));
  return { proc, log };
}

// s3rver on a free port with the bucket ringcache-test; returns its endpoint.
// extra: more s3server.js arguments (e.g. ['--extra-key', 'K:S']).
export async function startS3(extra = []) {
  const portFile = path.join(tmp, 's3.port');
  const js = path.join(srcDir, 'tests/harness/s3server.js');
  if (!fs.existsSync(path.join(nodeModules, 's3rver'))) skip(`s3rver is not in ${nodeModules}`);
  const { proc, log } = start('s3rver', process.execPath,
    [js, '--node-modules', nodeModules, '--version', '3', '--dir', path.join(tmp, 's3-data'),
      '--port-file', portFile, '--bucket', 'ringcache-test', ...extra],
    { NODE_OPTIONS: '--openssl-legacy-provider' });
  const port = await waitPortFile(portFile, proc, 's3rver', log);
  return { port, endpoint: `http://127.0.0.1:${port}`, proc };
}

// ringcache server with these extra arguments; returns {port, url, proc, log, stop}.
export async function startServer(args = [], env = {}, name = 'server') {
  if (!fs.existsSync(ringcache)) skip(`${ringcache} is not built`);
  const portFile = path.join(tmp, `${name}.port`);
  const { proc, log } = start(name, ringcache,
    ['server', '--port', '0', '--port-file', portFile, ...args],
    { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_REGION: 'us-east-1', ...env });
  const port = await waitPortFile(portFile, proc, name, log);
  const stop = async () => {
    if (proc.exitCode !== null) return proc.exitCode;
    const done = new Promise((r) => proc.on('exit', (code, sig) => r(code ?? 128 + os.constants.signals[sig])));
    proc.kill('SIGTERM');
    const t = setTimeout(() => proc.kill('SIGKILL'), 20000);
    const code = await done;
    clearTimeout(t);
    return code;
  };
  return { port, url: `http://127.0.0.1:${port}`, proc, log, stop };
}

// A check that counts: prints what failed, the test exits 1 at the end.
let failures = 0;
export function check(cond, what) {
  if (cond) {
    console.log(`ok: ${what}`);
  } else {
    failures++;
    console.log(`FAIL: ${what}`);
  }
}
export function failed() {
  return failures;
}
export { sleep };

// The end of a test: SIGTERM must stop the server with exit 0; then the
// verdict (the server log's tail on a failure) and the exit, which stops the
// S3 server and whatever else is left.
export async function finish(srv) {
  const code = await srv.stop();
  check(code === 0, `the server exits 0 after SIGTERM (${code})`);
  if (failures) {
    console.log(tail(srv.log));
    process.exit(1);
  }
  console.log('all passed');
  process.exit(0);
}
