// SPDX-License-Identifier: Apache-2.0
//
// test_server_merge_memory: the background merges' own memory limit
// (--merge-memory). A `ringcache server` with --warehouse over a real S3
// server and a limit far below what merging the table's parts holds: the
// official @clickhouse/client makes six parts; the pool looks for merges every
// 200 ms and starts none (its log says so, naming --merge-memory, and
// /metrics counts the merges skipped), the six parts and every row stay. A
// second server on the same warehouse with room to merge then merges them,
// the rows the same. Both servers must exit 0 on SIGTERM.
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
await finish(roomy);
