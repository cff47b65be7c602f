// SPDX-License-Identifier: Apache-2.0
//
// threads_duck.mjs: the DuckDB half of bench/threads.
//
//   node threads_duck.mjs gen DIR ROWS
//       writes a UK-price-paid-shaped table (price, date, postcode1, postcode2,
//       type, is_new, duration, addr1, street, locality, town, district,
//       county) of ROWS rows to DIR/data/uk_*.parquet (two zstd files)
//   node threads_duck.mjs time DIR THREADS RUNS SQL
//       prints "seconds <median of RUNS>" for SQL at THREADS threads
//   node threads_duck.mjs mem DIR THREADS SQL
//       prints "mem <bytes>": peak RSS minus RSS after start-up while SQL runs
//       once at THREADS threads, in this fresh process (VmHWM reset through
//       /proc/self/clear_refs after start-up, as bench/engine measures)
//
// Exits 77 (printing why) when the npm package is missing.
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const { loadDuckDB } = await import(join(here, '..', 'duckdb.mjs'));
const duck = await loadDuckDB();
const [mode, dir, a1, a2, a3] = process.argv.slice(2);
const status = (k) => {
  const m = readFileSync('/proc/self/status', 'utf8').match(new RegExp(`${k}:\\s+(\\d+) kB`));
  return m ? Number(m[1]) * 1024 : 0;
};
const threads = mode === 'gen' ? 2 : Number(a1);
const inst = await duck.DuckDBInstance.create(':memory:', {
  extension_directory: join(dir, 'duckdb_extensions'), threads: String(threads) });
const con = await inst.connect();

if (mode === 'gen') {
  const rows = Number(a1);
  mkdirSync(join(dir, 'data'), { recursive: true });
  const per = Math.ceil(rows / 2);
  for (let f = 0; f < 2; f++) {
    const lo = f * per, hi = Math.min(rows, lo + per);
    // county 130 values; district ~4 per county; town ~9 per county: a few
    // thousand (county, town, district) groups, as in the real data
    await con.run(`COPY (SELECT
      (10000 + (hash(i) % 400000) + (hash(i * 3) % 100) * (hash(i * 5) % 100) * 40)::UINTEGER AS price,
      (DATE '1995-01-01' + (i * 9497 // ${rows}) * INTERVAL 1 DAY)::DATE AS date,
      'PC' || (hash(i * 7) % 2300)::VARCHAR AS postcode1,
      (hash(i * 11) % 10)::VARCHAR || 'AB' AS postcode2,
      (ARRAY['terraced','semi-detached','detached','flat','other'])[1 + (hash(i * 13) % 5)::BIGINT] AS type,
      (hash(i * 17) % 10 = 0)::UTINYINT AS is_new,
      (ARRAY['freehold','leasehold'])[1 + (hash(i * 19) % 2)::BIGINT] AS duration,
      (hash(i * 23) % 300)::VARCHAR AS addr1,
      'STREET ' || (hash(i * 29) % 90000)::VARCHAR AS street,
      'LOCALITY ' || (hash(i * 31) % 20000)::VARCHAR AS locality,
      'TOWN ' || ((hash(i * 37) % 130) * 9 + hash(i * 41) % 9)::VARCHAR AS town,
      'DISTRICT ' || ((hash(i * 37) % 130) * 4 + hash(i * 43) % 4)::VARCHAR AS district,
      'COUNTY ' || (hash(i * 37) % 130)::VARCHAR AS county
      FROM range(${lo}, ${hi}) t(i) ORDER BY date)
      TO '${dir}/data/uk_${f}.parquet' (FORMAT parquet, COMPRESSION zstd)`);
  }
  process.exit(0);
}
if (mode === 'time') {
  const runs = Number(a2), sql = a3;
  await con.runAndReadAll(sql); // the OS page cache and DuckDB's caches warm, as ours
  const ts = [];
  for (let r = 0; r < runs; r++) {
    const t = process.hrtime.bigint();
    await con.runAndReadAll(sql);
    ts.push(Number(process.hrtime.bigint() - t) / 1e9);
  }
  ts.sort((x, y) => x - y);
  const n = ts.length;
  console.log(`seconds ${n % 2 ? ts[(n - 1) / 2] : (ts[n / 2 - 1] + ts[n / 2]) / 2}`);
  process.exit(0);
}
if (mode === 'mem') {
  const sql = a2;
  await con.runAndReadAll('SELECT 1');
  globalThis.gc?.();
  try { writeFileSync('/proc/self/clear_refs', '5'); } catch { /* HWM since start */ }
  const base = status('VmRSS');
  await con.runAndReadAll(sql);
  console.log(`mem ${status('VmHWM') - base}`);
  process.exit(0);
}
console.error('usage: node threads_duck.mjs gen DIR ROWS | time DIR THREADS RUNS SQL | mem DIR THREADS SQL');
process.exit(2);
