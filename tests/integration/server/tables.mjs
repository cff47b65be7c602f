// SPDX-License-Identifier: Apache-2.0
//
// test_server_tables: one `ringcache server` with --warehouse and --cache on a
// real ringcached node over a real S3 server, driven by the official JS
// client: CREATE TABLE, six INSERTs of JSONEachRow (six parts), then
//  - a scan of a one-part table three times: the first reads the part
//    through the cache node (page cache misses counted in system.events),
//    the third from the server's page cache (hits counted, fewer misses:
//    only the column chunks' edges, fetched as ranges), the same answer;
//  - SYSTEM DROP PAGE CACHE: the next scan misses again;
//  - the background pool (--merge-interval 200ms) merges the parts:
//    system.parts' active parts go from 6 to fewer, the rows stay;
//  - system.tables lists the table, SHOW TABLES too.
// The server must exit 0 on SIGTERM.
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { buildDir, check, finish, requireClient, sleep, startS3, startServer, tail, tempDir } from './srvutil.mjs';

const ch = await requireClient();
const tmp = tempDir('test_server_tables');
const s3 = await startS3();
const ringcached = path.join(buildDir, 'cached/ringcached');
const env = { ...process.env, AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_REGION: 'us-east-1' };

// one cache node
const pf = path.join(tmp, 'node.port');
fs.mkdirSync(path.join(tmp, 'node'));
const nodeProc = spawn(ringcached, ['--port', '0', '--port-file', pf, '--admin-port', '0', '--data-dir',
  path.join(tmp, 'node'), '--ssd-capacity', '256MiB', '--ram-capacity', '64MiB', '--s3-endpoint', s3.endpoint],
{ env, stdio: ['ignore', 'ignore', fs.openSync(path.join(tmp, 'node.log'), 'a')] });
process.on('exit', () => { try { nodeProc.kill('SIGKILL'); } catch { /* gone */ } });
let nodePort = 0;
for (let i = 0; i < 400 && !nodePort; i++) {
  try { nodePort = Number(fs.readFileSync(pf, 'utf8')); } catch { /* not yet */ }
  if (!nodePort) await sleep(25);
}
if (!nodePort) throw new Error(`ringcached did not start:\n${tail(path.join(tmp, 'node.log'))}`);

// the first server merges nothing (its page cache counters are the queries'
// alone); a second one on the same warehouse and node merges every 200 ms
const common = ['--s3-endpoint', s3.endpoint, '--warehouse', 's3://ringcache-test/wh/',
  '--cache', `127.0.0.1:${nodePort}`, '--page-cache', '256MiB', '--max-threads', '2'];
const srv = await startServer([...common, '--no-background-merges']);
const client = ch.createClient({ url: srv.url, request_timeout: 60000 });
const rows = async (query) => (await client.query({ query, format: 'JSONEachRow' })).json();
const events = async () => Object.fromEntries((await rows(
  "SELECT event, value FROM system.events WHERE event IN ('PageCacheHits', 'PageCacheMisses')"))
  .map((r) => [r.event, Number(r.value)]));

await client.command({ query: 'CREATE TABLE t (k UInt32, s String) ENGINE = MergeTree ORDER BY k' });
for (let p = 0; p < 6; p++) {
  const values = Array.from({ length: 5000 }, (_, i) => ({ k: p * 5000 + i, s: `row ${(p * 5000 + i) % 10000}` }));
  await client.insert({ table: 't', values, format: 'JSONEachRow' });
}
const scan = 'SELECT count() AS n, sum(k) AS sk, max(length(s)) AS l FROM t';
const want = [{ n: '30000', sk: String((29999 * 30000) / 2), l: '8' }];

// the page cache, on a table of one part (nothing to merge: its objects stay)
// of several blocks (incompressible hex), so that its reads go through pages
await client.command({ query: 'CREATE TABLE one (k UInt32, h String) ENGINE = MergeTree ORDER BY k' });
await client.insert({
  table: 'one',
  values: Array.from({ length: 200000 }, (_, i) => ({ k: i, h: createHash('sha256').update(String(i)).digest('hex') })),
  format: 'JSONEachRow',
});
const scanOne = 'SELECT count() AS n, sum(k) AS sk, max(h) AS mh FROM one';
const e0 = await events();
const r1 = await rows(scanOne);
const e1 = await events();
await rows(scanOne); // a block seen twice is admitted for good (S3-FIFO)
const e15 = await events();
const r2 = await rows(scanOne);
const e2 = await events();
check(r1.length === 1 && r1[0].n === '200000' && r1[0].sk === String((199999 * 200000) / 2) && r1[0].mh.length === 64,
  `the first scan: ${JSON.stringify(r1)}`);
check(JSON.stringify(r2) === JSON.stringify(r1), 'the second scan gives the same answer');
check(e1.PageCacheMisses > e0.PageCacheMisses, `the first scan read through the cache node (misses ${e0.PageCacheMisses} -> ${e1.PageCacheMisses})`);
// (the edges of column chunks are fetched as ranges, not pages, and count as
// misses every time: the whole blocks come from RAM)
const firstMisses = e1.PageCacheMisses - e0.PageCacheMisses;
check(e2.PageCacheHits - e15.PageCacheHits >= firstMisses / 3 &&
  e2.PageCacheMisses - e15.PageCacheMisses < firstMisses,
  `the third scan came from the page cache (hits ${e15.PageCacheHits} -> ${e2.PageCacheHits}, misses ${e15.PageCacheMisses} -> ${e2.PageCacheMisses}, the first scan's ${firstMisses})`);
await client.command({ query: 'SYSTEM DROP PAGE CACHE' });
const e3 = await events();
await rows(scanOne);
const e4 = await events();
check(e4.PageCacheMisses > e3.PageCacheMisses, `after SYSTEM DROP PAGE CACHE the scan misses again (${e3.PageCacheMisses} -> ${e4.PageCacheMisses})`);

// background merges, by the second server
const merger = await startServer([...common, '--merge-interval', '200ms', '--background-pool-size', '2'], {}, 'merger');
let active = 6;
for (let i = 0; i < 150 && active >= 6; i++) {
  active = Number((await rows("SELECT count() AS n FROM system.parts WHERE table = 't' AND active = 1"))[0].n);
  if (active >= 6) await sleep(100);
}
check(active < 6, `the background pool merged the parts (active parts: 6 -> ${active})`);
const after = await rows(scan);
check(JSON.stringify(after) === JSON.stringify(want), `the rows stay after the merge: ${JSON.stringify(after)}`);
const tabs = await rows("SELECT name FROM system.tables WHERE database = 'default' ORDER BY name");
check(JSON.stringify(tabs) === '[{"name":"one"},{"name":"t"}]', `system.tables lists them: ${JSON.stringify(tabs)}`);
const show = await (await client.query({ query: 'SHOW TABLES', format: 'TabSeparated' })).text();
check(show === 'one\nt\n', `SHOW TABLES: ${JSON.stringify(show)}`);
const m0 = await (await fetch(`${srv.url}/metrics`)).text();
const m1 = await (await fetch(`${merger.url}/metrics`)).text();
check(/^ringcache_server_merges_total 0$/m.test(m0) && /^ringcache_server_merges_total [1-9]/m.test(m1),
  'merges are counted in /metrics, by the server that merged');
check((await merger.stop()) === 0, 'the merging server exits 0 after SIGTERM');

await client.close();
await finish(srv);
