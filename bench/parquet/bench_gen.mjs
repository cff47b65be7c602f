// SPDX-License-Identifier: Apache-2.0
//
// bench_gen.mjs: the DuckDB half of bench/parquet. Writes the benchmark files
// with DuckDB (snappy and zstd, its defaults otherwise: PARQUET_VERSION V1,
// row groups of 122,880 rows) and times DuckDB decoding one column at a time,
// one thread, warm page cache, median of `runs`:
//
//   SELECT sum(i64)    FROM read_parquet(file)
//   SELECT min(s_low)  FROM read_parquet(file)
//   SELECT min(s_high) FROM read_parquet(file)
//
// The cheapest aggregates that make DuckDB decode every value of the column:
// min(i64) is answered from the footer statistics (about 1 ms), so integers
// use sum(); string min() is not (its time grows with the column), and
// count(col) could stop at the definition levels. Columns: i64 (random BIGINT),
// s_low (100 distinct strings, dictionary), s_high (unique 32-byte strings,
// PLAIN after DuckDB's dictionary gives up).
//
//   node bench_gen.mjs DIR ROWS RUNS   -> DIR/<codec>.parquet, DIR/duckdb.json
// Exits 77 (printing why) when the npm package is missing.
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const nm = process.env.RINGCACHE_NODE_MODULES || join(here, '..', '..', 'node_modules');
const req = createRequire(join(nm, 'noop.js'));
let duck;
try {
  duck = await import(pathToFileURL(req.resolve('@duckdb/node-api')).href);
} catch (e) {
  console.error(`SKIP: npm package @duckdb/node-api is not installed under ${nm}: ${e.message}`);
  process.exit(77);
}
const [dir, rowsArg, runsArg] = process.argv.slice(2);
const rows = Number(rowsArg || 8000000), runs = Number(runsArg || 3);
const inst = await duck.DuckDBInstance.create(':memory:', {
  extension_directory: join(dir, 'duckdb_extensions'),
  threads: '2',
});
const con = await inst.connect();
const out = [];
for (const codec of ['snappy', 'zstd']) {
  const path = join(dir, `${codec}.parquet`);
  await con.run(`COPY (SELECT (hash(i) >> 1)::BIGINT AS i64,
      'value_' || (hash(i * 7) % 100) AS s_low,
      md5(i::VARCHAR) AS s_high
    FROM range(${rows}) t(i)) TO '${path}' (FORMAT parquet, COMPRESSION ${codec})`);
}
await con.run("SET threads = 1");
for (const codec of ['snappy', 'zstd']) {
  const path = join(dir, `${codec}.parquet`);
  for (const col of ['i64', 's_low', 's_high']) {
    const times = [];
    for (let r = 0; r < runs + 1; r++) {
      const t0 = process.hrtime.bigint();
      await con.runAndReadAll(`SELECT ${col === 'i64' ? 'sum' : 'min'}(${col}) FROM read_parquet('${path}')`);
      const s = Number(process.hrtime.bigint() - t0) / 1e9;
      if (r > 0) times.push(s); // the first run warms the page cache
    }
    times.sort((a, b) => a - b);
    out.push({ codec, column: col, rows, seconds: times[times.length >> 1] });
  }
}
writeFileSync(join(dir, 'duckdb.json'), JSON.stringify(out) + '\n');
con.closeSync();
inst.closeSync();
