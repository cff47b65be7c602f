// SPDX-License-Identifier: Apache-2.0
//
// memgen.mjs: the data of test_engine_memory, written with DuckDB
// (@duckdb/node-api) into OUTDIR: rows.parquet, N rows of
//   id BIGINT, name VARCHAR (distinct per row), k INTEGER (100 values),
//   title VARCHAR (1000 values), v DOUBLE
// in DuckDB's default row groups, and small.parquet, the same shape in 20000
// rows (the probes run a query on it first, so that code pages and thread
// arenas are in place before the one measured).
//
//   node memgen.mjs OUTDIR N
//
// Exits 77 (printing why) when the npm package is missing.
import { join } from 'node:path';
import { loadDuckDB } from '../../../bench/duckdb.mjs';

const duck = await loadDuckDB();
const [D, N] = [process.argv[2], Number(process.argv[3])];
if (!D || !(N > 0)) {
  console.error('usage: node memgen.mjs OUTDIR N');
  process.exit(2);
}
const inst = await duck.DuckDBInstance.create(':memory:', {
  extension_directory: join(D, 'duckdb_extensions'), threads: '2' });
const con = await inst.connect();
const shape = (n) => `SELECT i::BIGINT AS id, 'user_' || (i * 7)::VARCHAR AS name,
  (i % 100)::INTEGER AS k, 'title number ' || (i % 1000)::VARCHAR AS title,
  (i * 0.5)::DOUBLE AS v FROM range(${n}) t(i)`;
await con.run(`COPY (${shape(N)}) TO '${join(D, 'rows.parquet')}' (FORMAT parquet)`);
await con.run(`COPY (${shape(20000)}) TO '${join(D, 'small.parquet')}' (FORMAT parquet)`);
