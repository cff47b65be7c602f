// SPDX-License-Identifier: Apache-2.0
//
// server_bench.mjs: `ringcache server` against `ringcache query` processes,
// in one run, on the same data and threads. bench/engine/bench_gen.mjs writes
// the SO-posts Parquet files (--rows, default 2M) into a temp folder; they are
// uploaded to s3rver (tests/harness/s3server.js) and warmed into two
// ringcached nodes; one server runs with --cache on them. Then:
//
//   first / hot   the seed query (bench/engine's: top 5 OwnerDisplayName by
//                 posts, 2 threads) through the server right after SYSTEM
//                 DROP PAGE CACHE (blocks from the warm nodes), then again
//                 (the page cache warm); median of --runs of each pair
//   local         the same query through a `ringcache query` process on the
//                 local files, interleaved with the pairs
//   select1       SELECT 1 over 4 kept-alive connections for --seconds, and
//                 the same count of `ringcache query "SELECT 1"` processes
//   point         a point query (WHERE Id = k, k random) 200 times over one
//                 kept-alive connection: p50 / p99
//
// The last line (bench/README.md's convention: a bare name is a speed, above 1
// we are faster; _ms is a cost):
//   server: hot_vs_local=<local s / hot s> hot_vs_first=<first s / hot s>
//           select1_rps=<requests/s> select1_vs_process=<server rps / process rps>
//           point_p50_ms=<ms> point_p99_ms=<ms>
// `na` when a part could not run, with the reason on stderr. Every process is
// stopped and the temp folder removed at the end.
//
//   node bench/server/server_bench.mjs [--rows N] [--runs R] [--seconds S]
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { buildDir, ringcache, srcDir, startS3, startServer, tempDir } from '../../tests/integration/server/srvutil.mjs';

const argv = process.argv.slice(2);
const arg = (n, d) => (argv.includes(n) ? Number(argv[argv.indexOf(n) + 1]) : d);
if (argv.includes('--help')) {
  console.log('server_bench [--rows N (2000000)] [--runs R (3)] [--seconds S (5)]');
  process.exit(0);
}
const rows = arg('--rows', 2000000);
const runs = arg('--runs', 3);
const seconds = arg('--seconds', 5);

const tmp = tempDir('server_bench');
const ringcached = path.join(buildDir, 'cached/ringcached');
const s3env = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_REGION: 'us-east-1' };
const children = [];
process.on('exit', () => { for (const c of children) { try { c.kill('SIGKILL'); } catch { /* gone */ } } });

const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
const pct = (a, p) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(s.length * p))]; };
const fmt = (x) => (x === null || !Number.isFinite(x) ? 'na' : x.toFixed(2));

// the data
const gen = spawnSync(process.execPath, [path.join(srcDir, 'bench/engine/bench_gen.mjs'), tmp, String(rows), '0'],
  { stdio: ['ignore', 'inherit', 'inherit'], env: process.env });
if (gen.status !== 0) {
  console.error(`server_bench: bench_gen.mjs failed (${gen.status}): no data`);
  console.log('server: hot_vs_local=na hot_vs_first=na select1_rps=na select1_vs_process=na point_p50_ms=na point_p99_ms=na');
  process.exit(gen.status === 77 ? 0 : 1);
}
const files = fs.readdirSync(path.join(tmp, 'data')).filter((f) => f.endsWith('.parquet')).sort();

const s3 = await startS3();
const env = { ...process.env, ...s3env, AWS_ENDPOINT_URL: s3.endpoint };
for (const f of files) {
  execFileSync(ringcache, ['put', path.join(tmp, 'data', f), `s3://ringcache-test/posts/${f}`], { env });
}

// two cache nodes
async function node(i) {
  const pf = path.join(tmp, `node${i}.port`);
  const dd = path.join(tmp, `node${i}`);
  fs.mkdirSync(dd);
  const p = spawn(ringcached, ['--port', '0', '--port-file', pf, '--data-dir', dd, '--ssd-capacity', '4GiB',
    '--ram-capacity', '1GiB', '--admin-port', '0', '--s3-endpoint', s3.endpoint], { env, stdio: ['ignore', 'ignore', 'ignore'] });
  children.push(p);
  for (let k = 0; k < 400; k++) {
    try { const port = Number(fs.readFileSync(pf, 'utf8')); if (port > 0) return `127.0.0.1:${port}`; } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`ringcached ${i} did not start`);
}
const members = [await node(1), await node(2)].join(',');
execFileSync(ringcache, ['warm', 's3://ringcache-test/posts/*.parquet', '--cache', members], { env });

const srv = await startServer(['--cache', members, '--s3-endpoint', s3.endpoint, '--page-cache', '2GiB',
  '--max-threads', '2', '--log-level', 'warn']);
children.push(srv.proc);

const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
function post(sql) {
  return new Promise((resolve, reject) => {
    const rq = http.request(`${srv.url}/`, { method: 'POST', agent }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`${res.statusCode}: ${body}`))));
    });
    rq.on('error', reject);
    rq.end(sql);
  });
}
async function timed(fn) { const t = process.hrtime.bigint(); await fn(); return Number(process.hrtime.bigint() - t) / 1e9; }

const seedFrom = (src) => `SELECT OwnerDisplayName, count() AS num_posts FROM ${src} WHERE OwnerDisplayName ` +
  "NOT IN ('', 'anon') GROUP BY OwnerDisplayName ORDER BY num_posts DESC LIMIT 5 SETTINGS max_threads = 2";
const seedS3 = seedFrom("s3('s3://ringcache-test/posts/*.parquet')");
const seedLocal = seedFrom(`file('${path.join(tmp, 'data')}/*.parquet')`);

const first = [], hot = [], local = [];
let answer = null, same = true;
for (let r = 0; r < runs; r++) {
  await post('SYSTEM DROP PAGE CACHE');
  first.push(await timed(async () => { answer = await post(seedS3); }));
  hot.push(await timed(async () => { same = same && (await post(seedS3)) === answer; }));
  local.push(await timed(async () => {
    const out = execFileSync(ringcache, ['query', '--format', 'TSV', '--max_threads', '2', seedLocal],
      { env, stdio: ['ignore', 'pipe', 'ignore'] });
    same = same && out.toString() === answer;
  }));
}
if (!same) console.error('server_bench: the answers differ between the server and ringcache query');
const ev = await post("SELECT event, value FROM system.events WHERE event IN ('PageCacheHits', 'PageCacheMisses') FORMAT TSV");
console.log(`seed: first ${fmt(median(first))} s, hot ${fmt(median(hot))} s, local process ${fmt(median(local))} s ` +
  `(median of ${runs}); ${ev.trim().replace(/\n/g, ', ')}`);

// SELECT 1 over keep-alive, 4 at once, against as many processes
let n = 0;
const until = Date.now() + seconds * 1000;
const t1 = process.hrtime.bigint();
await Promise.all([0, 1, 2, 3].map(async () => { while (Date.now() < until) { await post('SELECT 1'); n++; } }));
const rps = n / (Number(process.hrtime.bigint() - t1) / 1e9);
const procN = Math.max(8, Math.min(200, Math.round(rps / 20)));
const tp = await timed(async () => {
  await Promise.all([0, 1, 2, 3].map(async (w) => {
    for (let i = w; i < procN; i += 4) {
      await new Promise((res, rej) => {
        const p = spawn(ringcache, ['query', 'SELECT 1'], { stdio: 'ignore', env });
        p.on('exit', (c) => (c === 0 ? res() : rej(new Error(`ringcache query exited ${c}`))));
      });
    }
  }));
});
const procRps = procN / tp;
console.log(`SELECT 1: ${n} requests in ${seconds} s over 4 keep-alive connections (${rps.toFixed(0)}/s); ` +
  `${procN} ringcache query processes, 4 at a time: ${procRps.toFixed(1)}/s`);

// a point query
const lat = [];
for (let i = 0; i < 200; i++) {
  const k = 1 + Math.floor(Math.random() * rows);
  lat.push(await timed(() => post(`SELECT Id, Score FROM s3('s3://ringcache-test/posts/*.parquet') WHERE Id = ${k}`)) * 1000);
}
console.log(`point query: p50 ${pct(lat, 0.5).toFixed(1)} ms, p99 ${pct(lat, 0.99).toFixed(1)} ms (200, one connection)`);

await srv.stop();
console.log('(a bare name is a speed: above 1 we are faster; _ms is a cost)');
console.log(`server: hot_vs_local=${fmt(median(local) / median(hot))} hot_vs_first=${fmt(median(first) / median(hot))} ` +
  `select1_rps=${rps.toFixed(0)} select1_vs_process=${fmt(rps / procRps)} ` +
  `point_p50_ms=${pct(lat, 0.5).toFixed(1)} point_p99_ms=${pct(lat, 0.99).toFixed(1)}`);
process.exit(0);
