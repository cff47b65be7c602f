// SPDX-License-Identifier: Apache-2.0
//
// sqljoin_gen.mjs: the DuckDB half of sqljoin_bench. Writes a fact table
// (FACT rows: id, k a key into the dimension with duplicates, v, t) and a
// dimension (DIM rows: k unique, w, name) as Parquet with DuckDB, then times
// DuckDB on the same files at 1 and 2 threads (median of RUNS, warm page
// cache): the hash join, row_number() over partitions, a WITH query used
// twice, IN (SELECT ...) with up to 1M values; and DuckDB's peak memory of
// the join at 2 threads (peak RSS minus RSS after start-up, VmHWM after
// resetting it through /proc/self/clear_refs).
//
//   node sqljoin_gen.mjs DIR FACT DIM RUNS -> DIR/fact.parquet, DIR/dim.parquet, DIR/duckdb.txt
//
// duckdb.txt: "<query>_<threads>t <seconds>" per measurement,
// "<query>_cpu_1t <CPU-seconds per run>" at 1 thread and "mem_join_2t <bytes>". The queries are sqljoin_bench.c's, in DuckDB's dialect.
// Exits 77 (printing why) when the npm package is missing.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadDuck, status, medianTime } from './duck_util.mjs';
import { cpuSecondsPerRun } from '../duckdb.mjs';

const duck = await loadDuck();
const [dir, factArg, dimArg, runsArg] = process.argv.slice(2);
const fact = Number(factArg), dim = Number(dimArg), runs = Number(runsArg || 3);
mkdirSync(dir, { recursive: true });
const inst = await duck.DuckDBInstance.create(':memory:', { threads: '2' });
const con = await inst.connect();
const t0 = Date.now();
await con.run(`COPY (SELECT i::BIGINT AS id, (hash(i) % ${dim})::BIGINT AS k,
    (hash(i * 3) % 1000)::BIGINT AS v, (hash(i * 7) % 1000000000)::BIGINT AS t
  FROM range(${fact}) r(i)) TO '${dir}/fact.parquet' (FORMAT parquet, ROW_GROUP_SIZE 1000000)`);
await con.run(`COPY (SELECT j::BIGINT AS k, (j % 977) * 1.5 AS w, 'name_' || j::VARCHAR AS name
  FROM range(${dim}) r(j)) TO '${dir}/dim.parquet' (FORMAT parquet, ROW_GROUP_SIZE 100000)`);
console.error(`sqljoin_gen: ${fact} x ${dim} rows written in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

const F = `'${dir}/fact.parquet'`, D = `'${dir}/dim.parquet'`;
const inVals = Math.min(1000000, Math.floor(fact / 4));
const Q = {
  join: `SELECT count(*), sum(f.v), sum(d.w) FROM ${F} AS f JOIN ${D} AS d ON f.k = d.k`,
  window: `SELECT max(rn), count(*) FROM (SELECT row_number() OVER (PARTITION BY k ORDER BY t) AS rn FROM ${F})`,
  cte: `WITH a AS (SELECT k, sum(v) AS s FROM ${F} GROUP BY k) SELECT count(*), sum(s) FROM a UNION ALL SELECT max(s), min(s) FROM a`,
  in: `SELECT count(*), sum(v) FROM ${F} WHERE t IN (SELECT t FROM ${F} WHERE id < ${inVals})`,
};
const time = (sql) => medianTime(con, sql, runs);
let out = '';
await con.runAndReadAll(Q.join); // warm the OS page cache
for (const th of [1, 2]) {
  await con.run(`SET threads = ${th}`);
  for (const [name, sql] of Object.entries(Q))
    out += `${name}_${th}t ${await time(sql)}\n`;
}
await con.run('SET threads = 1');
for (const [name, sql] of Object.entries(Q))
  out += `${name}_cpu_1t ${await cpuSecondsPerRun(con, sql, runs)}\n`;
const inst2 = await duck.DuckDBInstance.create(':memory:', { threads: '2' });
const con2 = await inst2.connect();
await con2.runAndReadAll('SELECT 1');
try { writeFileSync('/proc/self/clear_refs', '5'); } catch { /* old kernels: HWM since start */ }
const base = status('VmRSS');
await con2.runAndReadAll(Q.join);
out += `mem_join_2t ${status('VmHWM') - base}\n`;
writeFileSync(join(dir, 'duckdb.txt'), out);
console.error(out.trim());
