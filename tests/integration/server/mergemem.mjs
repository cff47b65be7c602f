// SPDX-License-Identifier: Apache-2.0
//
// test_server_merge_memory: the background merges' own memory limit
// (--merge-memory). A `ringcache server` with --warehouse over a real S3
// server and a limit far below what merging the table's parts holds: the
// official @clickhouse/client makes six parts; the pool looks for merges every
// 200 ms and starts none (its log says so, naming --merge-memory, and
// /metrics counts the merges skipped), the six parts and every row stay. A
// second server on the same warehouse with room to merge then merges them,
// the rows the same. A third, on its own warehouse, starts a merge that fits
// the estimate and crosses the limit as it runs: it stops before its commit,
// and the parts and rows stay. Every server must exit 0 on SIGTERM.
import fs from 'node:fs';
import { check, finish, requireClient, sleep, startS3, startServer, tempDir } from './srvutil.mjs';

const ch = await requireClient();
tempDir('test_server_merge_memory');
const s3 = await startS3();
const common = ['--s3-endpoint', s3.endpoint, '--warehouse', 's3://ringcache-test/wh/', '--max-threads', '2',
  '--merge-interval', '200ms'];
const srv = await startServer([...common, '--merge-memory', '16KiB']);
const client = ch.createClient({ url: srv.url, request_timeout: 60000 });
const rows = async (c, query) => (await c.query({ query, format: 'JSONEachRow' })).json();

await client.command({ query: 'CREATE TABLE t (k UInt32, s String) ENGINE = MergeTree ORDER BY k' });
for (let p = 0; p < 6; p++) {
  const values = Array.from({ length: 5000 }, (_, i) => ({ k: p * 5000 + i, s: `row ${(p * 5000 + i) % 10000}` }));
  await client.insert({ table: 't', values, format: 'JSONEachRow' });
}
const scan = 'SELECT count() AS n, sum(k) AS sk, max(length(s)) AS l FROM t';
const want = JSON.stringify([{ n: '30000', sk: String((29999 * 30000) / 2), l: '8' }]);
const activeParts = async (c) =>
  Number((await rows(c, "SELECT count() AS n FROM system.parts WHERE table = 't' AND active = 1"))[0].n);

// the pool tries and does not start the merge: the log says why
let logged = '';
for (let i = 0; i < 150 && !logged; i++) {
  logged = fs.readFileSync(srv.log, 'utf8').split('\n').find((l) => /merge not started/.test(l)) || '';
  if (!logged) await sleep(100);
}
check(/--merge-memory/.test(logged) && /table=default\.t/.test(logged) && /needs=\d+/.test(logged) &&
  /merge_memory=16384/.test(logged), `the log says the merge was not started for memory: ${logged}`);
const m = await (await fetch(`${srv.url}/metrics`)).text();
check(/^ringcache_server_merges_skipped_for_memory_total [1-9]/m.test(m) && /^ringcache_server_merges_total 0$/m.test(m),
  'merges skipped for memory are counted in /metrics, none committed');
check(await activeParts(client) === 6, 'the six parts stay');
const r = JSON.stringify(await rows(client, scan));
check(r === want, `every row stays: ${r}`);
await client.close();
check((await srv.stop()) === 0, 'the limited server exits 0 after SIGTERM');

// room to merge: the same parts merge
const roomy = await startServer([...common, '--merge-memory', '256MiB'], {}, 'roomy');
const c2 = ch.createClient({ url: roomy.url, request_timeout: 60000 });
let active = 6;
for (let i = 0; i < 150 && active >= 6; i++) {
  active = await activeParts(c2);
  if (active >= 6) await sleep(100);
}
check(active < 6, `with --merge-memory 256MiB the pool merges the parts (active parts: 6 -> ${active})`);
const r2 = JSON.stringify(await rows(c2, scan));
check(r2 === want, `the rows stay after the merge: ${r2}`);
await c2.close();
check((await roomy.stop()) === 0, 'the roomy server exits 0 after SIGTERM');

// A merge whose estimate fits and whose run does not: parts of many small
// granules (the estimate is one granule per input, a few KiB) whose merged
// part is megabytes of barely compressible text, held by the part writer and
// its upload until the commit. Under 1 MiB the merge starts, crosses the
// limit, stops before its commit, and the parts and rows stay.
const crossing = await startServer(['--s3-endpoint', s3.endpoint, '--warehouse', 's3://ringcache-test/wh2/',
  '--max-threads', '2', '--merge-interval', '200ms', '--merge-memory', '1MiB'], {}, 'crossing');
const c3 = ch.createClient({ url: crossing.url, request_timeout: 60000 });
await c3.command({ query: 'CREATE TABLE u (k UInt32, h String) ENGINE = MergeTree ORDER BY k SETTINGS index_granularity = 128' });
const { randomBytes } = await import('node:crypto');
for (let p = 0; p < 6; p++) {
  const values = Array.from({ length: 20000 }, (_, i) => ({ k: p * 20000 + i, h: randomBytes(24).toString('hex') }));
  await c3.insert({ table: 'u', values, format: 'JSONEachRow' });
}
let stopped = '';
for (let i = 0; i < 150 && !stopped; i++) {
  stopped = fs.readFileSync(crossing.log, 'utf8').split('\n').find((l) => /merge stops and its parts stay/.test(l)) || '';
  if (!stopped) await sleep(100);
}
check(/background merges' memory limit \(1048576 bytes\) is exceeded/.test(stopped) && /table default\.u/.test(stopped),
  `a merge that crosses --merge-memory mid-run stops, and the log says so: ${stopped.slice(0, 400)}`);
const m3 = await (await fetch(`${crossing.url}/metrics`)).text();
check(/^ringcache_server_merges_total 0$/m.test(m3) && /^ringcache_server_background_failures_total [1-9]/m.test(m3) &&
  /^ringcache_server_merges_skipped_for_memory_total 0$/m.test(m3),
  'it was started (not skipped), failed, and committed nothing (/metrics)');
const uParts = Number((await rows(c3, "SELECT count() AS n FROM system.parts WHERE table = 'u' AND active = 1"))[0].n);
check(uParts === 6, `the six parts stay (${uParts})`);
const u = (await rows(c3, 'SELECT count() AS n, sum(k) AS sk, min(length(h)) AS l0, max(length(h)) AS l1 FROM u'))[0];
check(u.n === '120000' && u.sk === String((119999 * 120000) / 2) && Number(u.l0) === 48 && Number(u.l1) === 48,
  `every row stays: ${JSON.stringify(u)}`);
await c3.close();
await finish(crossing);
