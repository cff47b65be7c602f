// SPDX-License-Identifier: Apache-2.0
//
// test_server_cluster_insert: INSERT ... SELECT FROM s3Cluster with
// parallel_distributed_insert_select = 2 over real `ringcache server`
// processes. The real S3 server (s3rver) holds gen.mjs's posts (12 small
// Parquet files, 200,000 rows of unique Id) and the warehouse; three workers
// and an initiator (--cluster test=worker,worker,worker, one
// --cluster-secret, one --warehouse) run on loopback with --port 0
// --port-file. Checked against DuckDB reading the same Parquet: the row
// count and a checksum of the table (sums over every column, the distinct
// Ids) after the distributed insert, after = 0 (the initiator inserts) and
// after = 1; the summary's written_rows (0 for a rerun deduplicated whole,
// pdis = 2 and 0); each worker inserted a share;
// a unit run twice (on two workers, as when its first server died after its
// commit) lands once, and twice under insert_deduplicate = 0; the statement
// rerun with the same insert_deduplication_token adds nothing; a worker
// killed while the insert runs (scripted, bounded, restarted on its port)
// still leaves every row exactly once. Exits 77 without node packages or
// the binary.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { check, failed, nodeModules, ringcache, skip, sleep, srcDir, startS3, startServer, tempDir } from './srvutil.mjs';

const tmp = tempDir('test_server_cluster_insert');
const data = path.join(tmp, 'data');
const gen = spawnSync(process.execPath, [path.join(srcDir, 'tests/integration/engine/gen.mjs'), data],
  { stdio: ['ignore', 'inherit', 'inherit'] });
if (gen.status === 77) skip('gen.mjs needs @duckdb/node-api');
if (gen.status !== 0) throw new Error(`gen.mjs failed: ${gen.status}`);
if (!fs.existsSync(ringcache)) skip(`${ringcache} is not built`);
const duck = await import(path.join(nodeModules, '@duckdb/node-api/lib/index.js'));

const s3 = await startS3();
const bucket = 'ringcache-test';
for (const f of fs.readdirSync(path.join(data, 'small'))) {
  const r = await fetch(`${s3.endpoint}/${bucket}/small/${f}`, { method: 'PUT', body: fs.readFileSync(path.join(data, 'small', f)) });
  if (!r.ok) throw new Error(`PUT small/${f}: ${r.status}`);
}

// the oracle: DuckDB over the same files
const inst = await duck.DuckDBInstance.create(':memory:', { threads: '2' });
const con = await inst.connect();
const oracleSql = `SELECT count(*), sum(Id), sum(Score), count(ViewCount), sum(ViewCount), sum(length(OwnerDisplayName)),
  count(Title), sum(length(Title)), sum(PostTypeId * Id), count(DISTINCT Id) FROM '${data}/small/*.parquet'`;
const oracle = (await (await con.run(oracleSql)).getRows())[0].map(String).join('\t');
const checksumSql = `SELECT count(), sum(Id), sum(Score), count(ViewCount), sum(ViewCount), sum(length(OwnerDisplayName)),
  count(Title), sum(length(Title)), sum(PostTypeId * Id), uniqExact(Id) FROM t`;

const secret = 'test-cluster-secret';
// each server's system.query_log in memory only (not the warehouse's table that
// every server shares): the checks below read one server's rows
const common = ['--s3-endpoint', s3.endpoint, '--cluster-secret', secret, '--max-threads', '1',
  '--warehouse', `s3://${bucket}/wh/`, '--no-query-log-flush'];
const workers = [];
for (let i = 0; i < 3; i++) workers.push(await startServer(common, {}, `worker${i}`));
const members = workers.map((w) => `127.0.0.1:${w.port}`);
const init = await startServer([...common, '--cluster', `test=${members.join(',')}`], {}, 'initiator');

async function q(srv, sql, headers = {}) {
  const r = await fetch(`${srv.url}/?default_format=TSV`, { method: 'POST', body: sql, headers });
  let summary = {};
  try { summary = JSON.parse(r.headers.get('x-clickhouse-summary') || '{}'); } catch { /* none */ }
  return { status: r.status, text: await r.text(), summary };
}
const must = async (srv, sql) => {
  const r = await q(srv, sql);
  if (r.status !== 200) throw new Error(`${sql.slice(0, 80)}: ${r.status} ${r.text.slice(0, 300)}`);
  return r;
};

await must(init, `CREATE TABLE t (Id Int64, PostTypeId Int32, Score Int32, ViewCount Nullable(Int64),
  OwnerDisplayName String, Title Nullable(String)) ENGINE = MergeTree ORDER BY Id`);
const src = `s3Cluster('test', 's3://${bucket}/small/*.parquet')`;
const ins = (settings) => `INSERT INTO t SELECT Id, PostTypeId, Score, ViewCount, OwnerDisplayName, Title FROM ${src} SETTINGS ${settings}`;
const checksum = async () => (await must(init, checksumSql)).text.trim();
// (after units sent to the workers by hand, not through the initiator, its
// kept state of t may be up to --table-refresh-interval old: ask S3)
const count = async () => Number((await must(init, 'SELECT count() FROM t SETTINGS select_sequential_consistency = 1')).text.trim());

// pdis = 2: every row once, the summary the sum of the workers'
const writtenBefore = [];
for (const w of workers) writtenBefore.push(Number((await must(w, "SELECT sum(written_rows) FROM system.query_log WHERE type = 'QueryFinish'")).text.trim() || 0));
const r2 = await q(init, ins('parallel_distributed_insert_select = 2'));
check(r2.status === 200, `pdis = 2 inserts: ${r2.status} ${r2.text.slice(0, 300)}`);
check(Number(r2.summary.written_rows) === 200000, `the summary says 200000 written rows: ${JSON.stringify(r2.summary)}`);
check(Number(r2.summary.written_bytes) > 0 && Number(r2.summary.read_rows) === 200000, 'the summary has written bytes and the rows read');
const sum2 = await checksum();
check(sum2 === oracle, `pdis = 2: the table's checksum equals DuckDB's over the Parquet\n  ours   ${sum2}\n  DuckDB ${oracle}`);
let shares = 0;
for (let i = 0; i < 3; i++) {
  const after = Number((await must(workers[i], "SELECT sum(written_rows) FROM system.query_log WHERE type = 'QueryFinish'")).text.trim() || 0);
  shares += after > writtenBefore[i];
}
check(shares >= 2, `the workers inserted their shares themselves (${shares} of 3 wrote rows)`);
const wlog = (await must(workers[0], "SELECT is_initial_query, initial_query_id FROM system.query_log WHERE type = 'QueryFinish' AND query_kind = 'Insert' LIMIT 1")).text.trim();
const ilog = (await must(init, "SELECT query_id FROM system.query_log WHERE type = 'QueryFinish' AND query_kind = 'Insert' ORDER BY event_time_microseconds DESC LIMIT 1")).text.trim();
check(wlog === `0\t${ilog}`, `a worker's query_log row is not initial and names the initiator's query: '${wlog}' (initiator ${ilog})`);

// the statement rerun with the same token adds nothing
// and its summary says it wrote nothing, with pdis = 2 (the workers' sum)
// and with pdis = 0 (the initiator's own insert)
for (const pdis of [2, 0]) {
  await must(init, 'TRUNCATE TABLE t');
  const tok = `parallel_distributed_insert_select = ${pdis}, insert_deduplication_token = 'load-${pdis}'`;
  const first = await must(init, ins(tok));
  const again = await must(init, ins(tok));
  check(await checksum() === oracle, `pdis = ${pdis}: the statement rerun with the same insert_deduplication_token adds nothing`);
  check(Number(first.summary.written_rows) === 200000 && Number(again.summary.written_rows) === 0 &&
    Number(again.summary.written_bytes) === 0,
  `pdis = ${pdis}: the rerun's summary says 0 rows written (first ${JSON.stringify(first.summary)}, rerun ${JSON.stringify(again.summary)})`);
}

// pdis = 0 (the initiator inserts) and 1 (as 2 for s3Cluster) load the same
for (const pdis of [0, 1]) {
  await must(init, 'TRUNCATE TABLE t');
  const r = await q(init, ins(`parallel_distributed_insert_select = ${pdis}`));
  const c = r.status === 200 ? await checksum() : r.text;
  check(c === oracle, `pdis = ${pdis}: the same table: ${c.slice(0, 200)}`);
}
const bad = await q(init, ins('parallel_distributed_insert_select = 3'));
check(bad.status !== 200 && bad.text.includes('parallel_distributed_insert_select'), `pdis = 3 is refused naming the setting: ${bad.text.slice(0, 200)}`);

// one unit run twice, on two workers (its first server died after its
// commit, before answering): once; twice under insert_deduplicate = 0
const unitSql = (s) => `INSERT INTO t SELECT Id, PostTypeId, Score, ViewCount, OwnerDisplayName, Title FROM ${src} SETTINGS parallel_distributed_insert_select = 2${s}`;
const unitHeaders = { 'X-RingCache-Unit': '3 -1 -1 small/part_03.parquet', 'X-RingCache-Cluster-Secret': secret, 'X-RingCache-Initial-Query-Id': 'q-unit-test' };
const part3 = Number((await (await con.run(`SELECT count(*) FROM '${data}/small/part_03.parquet'`)).getRows())[0][0]);
for (const [dedup, want] of [['', part3], [', insert_deduplicate = 0', 2 * part3]]) {
  await must(init, 'TRUNCATE TABLE t');
  const a = await q(workers[0], unitSql(dedup), unitHeaders);
  const b = await q(workers[1], unitSql(dedup), unitHeaders);
  const n = await count();
  check(a.status === 200 && b.status === 200 && n === want,
    `a unit run on two workers${dedup}: ${n} rows, want ${want} (${a.status} ${b.status} ${b.text.slice(0, 200)})`);
  const wrote = Number(b.summary.written_rows);
  check(wrote === want - part3, `the second run of the unit${dedup} says it wrote ${wrote} rows, want ${want - part3}`);
}

// a worker killed while the insert runs: every row exactly once
const w2port = workers[2].port;
let right = 0, mid = 0;
const rounds = 8;
for (let i = 0; i < rounds; i++) {
  await must(init, 'TRUNCATE TABLE t');
  const p = q(init, ins('parallel_distributed_insert_select = 2, skip_unavailable_shards = 1'));
  let finished = false;
  p.then(() => { finished = true; });
  await sleep(20 + 30 * i);
  const wasRunning = !finished;
  workers[2].proc.kill('SIGKILL');
  const r = await p;
  const c = r.status === 200 ? await checksum() : r.text;
  mid += wasRunning;
  right += c === oracle;
  if (c !== oracle) console.log(`kill ${i}: ${r.status} ${c.slice(0, 300)}`);
  workers[2] = await startServer([...common, '--port', String(w2port)], {}, `worker2-${i}`);
}
console.log(`killed_worker_insert_ok=${right}/${rounds} (${mid} killed while the insert ran)`);
check(right === rounds, `a worker killed mid-insert: ${right}/${rounds} tables with every row exactly once`);
check(mid >= 1, `at least one kill landed while the insert ran (${mid})`);

for (const w of [init, ...workers]) check((await w.stop()) === 0, 'a server exits 0 on SIGTERM');
process.exit(failed() ? 1 : 0);
