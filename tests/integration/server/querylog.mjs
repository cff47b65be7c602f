// SPDX-License-Identifier: Apache-2.0
//
// test_server_query_log: system.query_log flushed into the warehouse. Two
// `ringcache server`s on one warehouse over a real S3 server, driven by the
// official @clickhouse/client: the first runs queries and SYSTEM FLUSH LOGS;
// the second then sees those rows (each once) in its own system.query_log,
// beside its own not-yet-flushed rows. A query's rows are counted once
// before and after the flush (no row both in memory and in the table). The
// first server restarts and still sees its old rows. With the S3 server
// stopped, a flush fails with a sentence, other queries go on, and the rows
// stay in memory: after S3 comes back the next flush writes them, once. A
// server with a short --query-log-flush-interval flushes by itself, logging
// each failure while S3 is down and writing the rows it kept once it is back.
// Every server must exit 0 on SIGTERM.
import fs from 'node:fs';
import path from 'node:path';
import { check, finish, requireClient, startS3, startServer, tempDir } from './srvutil.mjs';

const ch = await requireClient();
const dir = tempDir('test_server_query_log');
let s3 = await startS3();
const args = (ep) => ['--s3-endpoint', ep, '--warehouse', 's3://ringcache-test/wh/', '--max-threads', '2',
  '--no-background-merges', '--query-log-flush-interval', '1h'];
const a = await startServer([...args(s3.endpoint), '--display-name', 'srv-a'], {}, 'a');
const b = await startServer([...args(s3.endpoint), '--display-name', 'srv-b'], {}, 'b');
const ca = ch.createClient({ url: a.url, request_timeout: 60000 });
const cb = ch.createClient({ url: b.url, request_timeout: 60000 });
const rows = async (c, query) => (await c.query({ query, format: 'JSONEachRow' })).json();
const count = async (c, where) =>
  Number((await rows(c, `SELECT count() AS n FROM system.query_log WHERE ${where}`))[0].n);

for (let i = 0; i < 3; i++) await ca.query({ query: `SELECT ${i} AS x`, query_id: `qa-${i}`, format: 'JSONEachRow' });
const before = await count(ca, "query_id LIKE 'qa-%'");
check(before === 6, `server a logs QueryStart and QueryFinish of its three queries in memory (${before})`);
check(await count(cb, "query_id LIKE 'qa-%'") === 0, "server b does not see a's rows before a flushes");

await ca.command({ query: 'SYSTEM FLUSH LOGS' });
const after = await count(ca, "query_id LIKE 'qa-%'");
check(after === 6, `after SYSTEM FLUSH LOGS server a still counts each of those rows once (${after})`);
const fromB = await rows(cb, "SELECT hostname, server_address, type, query FROM system.query_log " +
  "WHERE query_id = 'qa-1' ORDER BY type");
check(fromB.length === 2 && fromB.every((r) => r.hostname === 'srv-a' && r.server_address === `srv-a:${a.port}` &&
  r.query.startsWith('SELECT 1 AS x')) && fromB[0].type === 'QueryFinish' && fromB[1].type === 'QueryStart',
`server b reads a's flushed rows from the warehouse, with a's hostname and address: ${JSON.stringify(fromB)}`);
await cb.query({ query: 'SELECT 42', query_id: 'qb-1', format: 'JSONEachRow' });
check(await count(cb, "query_id = 'qb-1'") === 2, "server b's own rows not yet flushed are there beside a's");
const sysq = await rows(cb, "SELECT name, engine FROM system.tables WHERE database = 'system' AND name = 'query_log'");
check(sysq.length === 1 && sysq[0].engine === 'MergeTree', `system.tables lists system.query_log once, as the warehouse's MergeTree table: ${JSON.stringify(sysq)}`);
const shown = (await (await cb.query({ query: 'SHOW TABLES FROM system', format: 'TabSeparated' })).text()).split('\n');
check(shown.filter((n) => n === 'query_log').length === 1 && shown.includes('processes') && shown.includes('parts'),
  `SHOW TABLES FROM system with a warehouse: the server's system tables and the warehouse's: ${shown.join(' ')}`);
const dup = await rows(cb, 'SELECT query_id, type, count() AS n FROM system.query_log GROUP BY query_id, type HAVING n > 1');
check(dup.length === 0, `no row twice on server b: ${JSON.stringify(dup)}`);

// a restart: the rows a flushed (and those it flushes as it stops) stay
await ca.query({ query: 'SELECT 7', query_id: 'qa-last', format: 'JSONEachRow' });
await ca.close();
check((await a.stop()) === 0, 'server a exits 0 after SIGTERM');
const a2 = await startServer([...args(s3.endpoint), '--display-name', 'srv-a'], {}, 'a2');
const ca2 = ch.createClient({ url: a2.url, request_timeout: 60000 });
check(await count(ca2, "query_id LIKE 'qa-%' AND hostname = 'srv-a'") === 8,
  'after a restart server a sees its old rows, those flushed as it stopped among them, each once');

// S3 down: the flush fails with a sentence, queries go on, the rows wait in memory
const c = await startServer([...args(s3.endpoint), '--display-name', 'srv-c', '--query-log-flush-interval', '200ms'], {}, 'c');
const cc = ch.createClient({ url: c.url, request_timeout: 60000 });
await ca2.query({ query: 'SELECT 8', query_id: 'qa2-down', format: 'JSONEachRow' });
const s3port = s3.port;
s3.proc.kill('SIGTERM');
await new Promise((r) => (s3.proc.exitCode !== null ? r() : s3.proc.on('exit', r)));
let flushErr = '';
try {
  await ca2.command({ query: 'SYSTEM FLUSH LOGS' });
} catch (e) {
  flushErr = String(e.message);
}
check(/cannot flush system\.query_log/.test(flushErr), `a flush with S3 down fails in words: ${flushErr.slice(0, 300)}`);
// server c flushes every 200 ms by itself: with S3 down it logs each failure and keeps its rows
await cc.query({ query: 'SELECT 3', query_id: 'qc-1', format: 'JSONEachRow' });
let warned = '';
for (let i = 0; i < 100 && !warned; i++) {
  warned = fs.readFileSync(c.log, 'utf8').split('\n').find((l) => /level=warn msg="cannot flush system\.query_log/.test(l)) || '';
  if (!warned) await new Promise((r) => setTimeout(r, 100));
}
check(/its rows stay in memory/.test(warned) && /error="/.test(warned), `a periodic flush that fails is logged: ${warned.slice(0, 300)}`);
const mt = await (await fetch(`${a2.url}/metrics`)).text();
check(/^ringcache_server_query_log_flush_failures_total [1-9]/m.test(mt), 'the failed flush is counted in /metrics');
const one = await rows(ca2, 'SELECT 1 AS one');
check(one.length === 1 && one[0].one === 1, 'other queries go on while the flush fails');
// let server c fail five flushes in a row, so that its log shows fewer lines than failures
const cFailures = async () => Number(((await (await fetch(`${c.url}/metrics`)).text())
  .match(/^ringcache_server_query_log_flush_failures_total (\d+)/m) || [0, 0])[1]);
for (let i = 0; i < 100 && (await cFailures()) < 5; i++) await new Promise((r) => setTimeout(r, 100));
fs.rmSync(path.join(dir, 's3.port'), { force: true }); // the new server's, not the old one's
s3 = await startS3(['--port', String(s3port)]);
await ca2.command({ query: 'SYSTEM FLUSH LOGS' });
check(await count(cb, "query_id = 'qa2-down'") === 2,
  'once S3 is back the rows kept in memory are flushed, each once, and server b sees them');
check(await count(ca2, "query_id = 'qa2-down'") === 2, 'server a counts them once too');
let seen = 0;
for (let i = 0; i < 100 && seen < 2; i++) {
  seen = await count(cb, "query_id = 'qc-1'");
  if (seen < 2) await new Promise((r) => setTimeout(r, 100));
}
check(seen === 2, `server c's periodic flush writes the rows it kept while S3 was down: b sees them once (${seen})`);
check(await count(cc, "query_id = 'qc-1'") === 2, 'and c counts them once');
// the failures in a row are logged at the 1st, 2nd, 4th, ... and the recovery once
const cFails = await cFailures();
let clog = [];
for (let i = 0; i < 50; i++) {
  clog = fs.readFileSync(c.log, 'utf8').split('\n');
  if (clog.some((l) => /msg="system\.query_log is flushed into the warehouse again"/.test(l))) break;
  await new Promise((r) => setTimeout(r, 100));
}
const warns = clog.filter((l) => /level=warn msg="cannot flush system\.query_log/.test(l));
const back = clog.filter((l) => /msg="system\.query_log is flushed into the warehouse again" failed_flushes=\d+/.test(l));
check(cFails >= 5 && warns.length >= 1 && warns.length <= Math.floor(Math.log2(cFails)) + 1,
  `server c logs ${warns.length} of its ${cFails} failed flushes (the 1st, 2nd, 4th, ...)`);
check(back.length === 1, `server c logs once that the flushes work again: ${back.join(' | ').slice(0, 300)}`);
await cc.close();
check((await c.stop()) === 0, 'server c exits 0 after SIGTERM');
const mt2 = await (await fetch(`${a2.url}/metrics`)).text();
check(/^ringcache_server_query_log_flushed_rows_total [1-9]/m.test(mt2) && /^ringcache_server_query_log_lost_rows_total 0$/m.test(mt2),
  'rows flushed are counted in /metrics, none lost');


await ca2.close();
await cb.close();
check((await a2.stop()) === 0, 'the restarted server a exits 0 after SIGTERM');
await finish(b);
