// SPDX-License-Identifier: Apache-2.0
//
// sqlfn_gen.mjs: the DuckDB half of bench/engine's sqlfn_bench. Writes ROWS
// rows in two Parquet files (zstd): Id, K (1000 group keys), S (a string of
// about 0.8 * ROWS distinct values), V (a double), C (0..99), G (a BIGINT of
// up to 1M distinct values in random order), and measures DuckDB's peak
// memory on `distinct` at 2 threads (peak RSS minus RSS after start-up,
// VmHWM reset through /proc/self/clear_refs). The timings are taken in turns
// with the engine's (`--time`: a fresh instance a turn, the page cache warm),
// so both sides see the machine's load of the same minutes:
//
//   distinct   SELECT count(DISTINCT S)
//   quantile   SELECT quantile_cont(V, 0.5)           (ClickHouse: median(V))
//   if         SELECT K, sum(V) FILTER (WHERE C > 50), count(*) FILTER (WHERE C < 10) GROUP BY K
//   groupby    SELECT count(*), sum(c), max(s) FROM (SELECT G, count(*) AS c, sum(V) AS s
//              GROUP BY G)                              (up to 1M groups)
//
//   decimal    SELECT sum(Amount)                       (as many rows of Id, Amount
//                                                       DECIMAL(18,2) in dec_*.parquet)
//
//   node sqlfn_gen.mjs DIR ROWS                 -> DIR/data/{fn,dec}_*.parquet, DIR/duckdb.txt
//   node sqlfn_gen.mjs DIR --time NAME THREADS  -> DIR/turn.txt: "NAME <seconds>"
//
// duckdb.txt: "mem_distinct_2t <bytes>". Exits 77 (printing why) when the
// npm package is missing.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadDuckDB, medianSeconds } from '../duckdb.mjs';

const duck = await loadDuckDB();
const [dir, rowsArg, nameArg, threadsArg] = process.argv.slice(2);
const timing = rowsArg === '--time';
const rows = timing ? 0 : Number(rowsArg || 20000000);
mkdirSync(join(dir, 'data'), { recursive: true });
const open = async () => (await duck.DuckDBInstance.create(':memory:', {
  extension_directory: join(dir, 'duckdb_extensions'), threads: '2' })).connect();
const con = await open();
if (!timing) {
  const per = Math.ceil(rows / 2);
  const t0 = Date.now();
  for (let f = 0; f < 2; f++) {
    const lo = f * per, hi = Math.min(rows, lo + per);
    await con.run(`COPY (SELECT i::BIGINT AS Id, (hash(i) % 1000)::INTEGER AS K,
      'key_' || (hash(i * 7) % ${Math.max(1, Math.floor(rows * 1.6))})::VARCHAR AS S,
      (hash(i * 3) % 1000000)::DOUBLE / 1000 AS V, (hash(i * 5) % 100)::INTEGER AS C,
      (hash(i * 11) % 1000000)::BIGINT AS G
      FROM range(${lo}, ${hi}) t(i)) TO '${dir}/data/fn_${f}.parquet' (FORMAT parquet, COMPRESSION zstd)`);
  }
  // the Decimal sum: one DECIMAL(18,2) column (INT64 in Parquet), the same row count
  for (let f = 0; f < 2; f++) {
    const lo = f * per, hi = Math.min(rows, lo + per);
    await con.run(`COPY (SELECT i::BIGINT AS Id,
      (((hash(i * 37) % 2000000000000)::BIGINT - 1000000000000) * 0.01)::DECIMAL(18,2) AS Amount
      FROM range(${lo}, ${hi}) t(i)) TO '${dir}/data/dec_${f}.parquet' (FORMAT parquet, COMPRESSION snappy)`);
  }
  console.error(`sqlfn_gen: ${rows} rows written in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}
const G = `'${dir}/data/fn_*.parquet'`;
const Q = {
  distinct: `SELECT count(DISTINCT S) FROM ${G}`,
  quantile: `SELECT quantile_cont(V, 0.5) FROM ${G}`,
  if: `SELECT K, sum(V) FILTER (WHERE C > 50), count(*) FILTER (WHERE C < 10) FROM ${G} GROUP BY K`,
  decimal: `SELECT sum(Amount) FROM '${dir}/data/dec_*.parquet'`,
  groupby: `SELECT count(*), sum(c), max(s) FROM (SELECT G, count(*) AS c, sum(V) AS s FROM ${G} GROUP BY G)`,
};
if (timing) {
  // one turn: query NAME once at THREADS threads on this fresh instance
  if (!(nameArg in Q))
    throw new Error(`--time: no query named ${nameArg}`);
  await con.run(`SET threads = ${Number(threadsArg) || 1}`);
  const secs = await medianSeconds(con, Q[nameArg], 1);
  writeFileSync(join(dir, 'turn.txt'), `${nameArg} ${secs}\n`);
  process.exit(0);
}
const status = (k) => {
  const m = readFileSync('/proc/self/status', 'utf8').match(new RegExp(`${k}:\\s+(\\d+) kB`));
  return m ? Number(m[1]) * 1024 : 0;
};
const con2 = await open();
await con2.runAndReadAll('SELECT 1');
try { writeFileSync('/proc/self/clear_refs', '5'); } catch { /* old kernels: HWM since start */ }
const base = status('VmRSS');
await con2.runAndReadAll(Q.distinct);
const out = `mem_distinct_2t ${status('VmHWM') - base}\n`;
writeFileSync(join(dir, 'duckdb.txt'), out);
console.error(out.trim());
