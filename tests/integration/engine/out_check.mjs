// SPDX-License-Identifier: Apache-2.0
//
// out_check.mjs: DuckDB's half of test_engine_output (the engine's output
// formats read back by DuckDB).
//
//   node out_check.mjs gen DIR        -> DIR/src.parquet (every type the writer
//                                        writes, with NULLs), DIR/glob/*.parquet
//                                        (three files, one of them empty),
//                                        DIR/big.parquet (1.2M rows)
//   node out_check.mjs query OUT SQL  -> OUT: the rows of SQL as TSV, printed as
//                                        ClickHouse prints them (duck_fmt.mjs)
//
// Exits 77 (printing why) when @duckdb/node-api is missing.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadDuckDB } from '../../../bench/duckdb.mjs';
import { duckText } from './duck_fmt.mjs';

const duck = await loadDuckDB();
const [mode, a, b] = process.argv.slice(2);
const inst = await duck.DuckDBInstance.create(':memory:', { threads: '2' });
const con = await inst.connect();
if (mode === 'gen') {
  mkdirSync(join(a, 'glob'), { recursive: true });
  await con.run(`CREATE TABLE src AS SELECT i::BIGINT AS Id,
    (i % 100 - 50)::TINYINT AS I8, (i * 7 % 30000)::SMALLINT AS I16, (i * 13)::INTEGER AS I32,
    (i % 250)::UTINYINT AS U8, (i * 3 % 60000)::USMALLINT AS U16, (i * 101)::UINTEGER AS U32,
    (i * 1000003)::UBIGINT AS U64,
    CASE WHEN i % 4 = 1 THEN NULL ELSE i / 8.0 END AS F64, (i / 4.0)::FLOAT AS F32,
    CASE WHEN i % 5 = 2 THEN NULL WHEN i % 5 = 3 THEN '' ELSE 'str_' || i::VARCHAR || repeat('x', (i % 7)::INTEGER) END AS S,
    i % 3 = 0 AS B,
    DATE '2020-02-28' + (i % 900)::INTEGER AS D,
    TIMESTAMP '2021-03-04 05:06:07' + to_microseconds(i * 1234567) AS TS,
    CASE WHEN i % 6 = 4 THEN NULL ELSE ((i * 7919 % 2000000) - 1000000) * 0.01 END::DECIMAL(12,2) AS P,
    ((i % 999) * 0.001)::DECIMAL(5,3) AS Q
  FROM range(3000) t(i)`);
  await con.run(`COPY src TO '${a}/src.parquet' (FORMAT parquet)`);
  await con.run(`COPY (SELECT * FROM src WHERE Id < 1000) TO '${a}/glob/a.parquet' (FORMAT parquet)`);
  await con.run(`COPY (SELECT * FROM src WHERE Id < 0) TO '${a}/glob/b.parquet' (FORMAT parquet)`);
  await con.run(`COPY (SELECT * FROM src WHERE Id >= 1000 AND Id < 1700) TO '${a}/glob/c.parquet' (FORMAT parquet)`);
  await con.run(`COPY (SELECT i::BIGINT AS Id, (i % 1000)::INTEGER AS K FROM range(1200000) t(i)) TO '${a}/big.parquet' (FORMAT parquet)`);
} else if (mode === 'query') {
  const r = await con.runAndReadAll(b);
  const rows = r.getRows().map((row) => row.map((v) => duckText(duck, v)).join('\t'));
  writeFileSync(a, rows.map((l) => l + '\n').join(''));
} else {
  console.error('usage: node out_check.mjs gen DIR | query OUT SQL');
  process.exit(2);
}
