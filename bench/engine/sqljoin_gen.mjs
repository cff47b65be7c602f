// SPDX-License-Identifier: Apache-2.0
//
// sqljoin_gen.mjs: the DuckDB half of sqljoin_bench. Writes a fact table
// (FACT rows: id, k a key into the dimension with duplicates, v, t) and a
// dimension (DIM rows: k unique, w, name) as Parquet with DuckDB, then
// measures DuckDB's CPU-seconds per run at 1 thread (warm page cache) of
// the hash join, row_number() over partitions, a WITH query used twice and
// IN (SELECT ...) with up to 1M values, and its peak memory of the join at
// 2 threads (peak RSS minus RSS after start-up, VmHWM after resetting it
// through /proc/self/clear_refs). Their times are taken in turns with the
// engine's (`--time`: one run on a fresh instance a turn), so both sides see
// the machine's load of the same minutes:
//
//   node sqljoin_gen.mjs DIR FACT DIM RUNS     -> DIR/fact.parquet, DIR/dim.parquet,
//                                                 DIR/duckdb.txt, DIR/queries.json
//   node sqljoin_gen.mjs DIR --time NAME THREADS -> DIR/turn.txt: "NAME <seconds>"
//
// duckdb.txt: "<query>_cpu_1t <CPU-seconds per run>" and "mem_join_2t
// <bytes>". The queries are sqljoin_bench.c's, in DuckDB's dialect.
// Exits 77 (printing why) when the npm package is missing.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadDuck, status, medianTime } from './duck_util.mjs';
import { cpuSecondsPerRun } from '../duckdb.mjs';

const duck = await loadDuck();
const [dir, factArg, dimArg, runsArg] = process.argv.slice(2);
if (factArg === '--time') {
  // one turn: query NAME (dimArg) once at THREADS (runsArg) threads on a fresh instance
  const Q = JSON.parse(readFileSync(join(dir, 'queries.json'), 'utf8'));
  if (!(dimArg in Q))
    throw new Error(`--time: no query named ${dimArg}`);
  const inst = await duck.DuckDBInstance.create(':memory:', { threads: String(Number(runsArg) || 1) });
  const con = await inst.connect();
  const secs = await medianTime(con, Q[dimArg], 1);
  writeFileSync(join(dir, 'turn.txt'), `${dimArg} ${secs}\n`);
  process.exit(0);
}
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
writeFileSync(join(dir, 'queries.json'), JSON.stringify(Q));
let out = '';
await con.runAndReadAll(Q.join); // warm the OS page cache
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
