// SPDX-License-Identifier: Apache-2.0
//
// gen.mjs: writes the Parquet test files for tests/integration/parquet and,
// for each, a reference dump of what DuckDB reads from it. Writers: DuckDB
// (@duckdb/node-api: every codec, PARQUET_VERSION V1 and V2, dictionary and
// plain, many row groups, one page per chunk, empty files) and hyparquet-writer
// (data pages v2, PLAIN / RLE / RLE_DICTIONARY / DELTA_* / BYTE_STREAM_SPLIT,
// REQUIRED columns, FLOAT16, decimals in byte arrays, multi-member GZIP).
//
//   node gen.mjs OUTDIR            -> OUTDIR/<name>.parquet, <name>.ref, manifest.txt
//
// A .ref file is text, one value per line, column after column:
//   rows <N>
//   col <name>\t<DuckDB type>
//   <N lines: \N for NULL, else the canonical text of the value>
// Canonical text: integers and booleans (0/1) in decimal; FLOAT/DOUBLE as the
// 16 hex digits of the IEEE double (nan for any NaN); DATE as days since the
// epoch; TIMESTAMP* as ns since the epoch; TIME as us since midnight; DECIMAL
// as DuckDB prints it; strings and blobs as upper-case hex of their bytes.
// Exits 77 (printing why) when node packages are missing.
import { createRequire } from 'node:module';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';

const here = dirname(fileURLToPath(import.meta.url));
const nm = process.env.RINGCACHE_NODE_MODULES || join(here, '..', '..', '..', 'node_modules');
const req = createRequire(join(nm, 'noop.js'));

async function load(name) {
  try {
    return await import(pathToFileURL(req.resolve(name)).href);
  } catch (e) {
    console.error(`SKIP: npm package ${name} is not installed under ${nm} (run npm install in the repo root): ${e.message}`);
    process.exit(77);
  }
}

const outdir = process.argv[2];
if (!outdir) {
  console.error('usage: node gen.mjs OUTDIR');
  process.exit(2);
}
mkdirSync(outdir, { recursive: true });
const duck = await load('@duckdb/node-api');
const hyw = await load('hyparquet-writer');

const inst = await duck.DuckDBInstance.create(':memory:', {
  extension_directory: join(outdir, 'duckdb_extensions'),
  threads: '2',
});
const con = await inst.connect();
const files = [];

// ---- DuckDB-written files -------------------------------------------------
// Nulls in every column, at a different period per column.
const nul = (k, e) => `CASE WHEN i % ${k} = ${k >> 1} THEN NULL ELSE ${e} END`;
const typesSelect = (n) => `SELECT
  i::BIGINT AS id,
  ${nul(7, 'i % 2 = 0')} AS b,
  ${nul(11, '(i % 256 - 128)::TINYINT')} AS i8,
  ${nul(13, '((i * 37) % 65536 - 32768)::SMALLINT')} AS i16,
  ${nul(5, '((hash(i) % 4294967296)::BIGINT - 2147483648)::INTEGER')} AS i32,
  ${nul(9, '(hash(i) >> 1)::BIGINT * CASE WHEN i % 2 = 0 THEN 1 ELSE -1 END')} AS i64,
  ${nul(6, '(i % 256)::UTINYINT')} AS u8,
  ${nul(8, '((i * 7919) % 65536)::USMALLINT')} AS u16,
  ${nul(10, '(hash(i) % 4294967296)::UINTEGER')} AS u32,
  ${nul(12, 'hash(i)')} AS u64,
  ${nul(14, `CASE i % 13 WHEN 0 THEN 'nan'::FLOAT WHEN 1 THEN '-inf'::FLOAT WHEN 2 THEN -0.0::FLOAT ELSE (i * 1.37 - 500)::FLOAT END`)} AS f32,
  ${nul(15, `CASE i % 17 WHEN 0 THEN 'inf'::DOUBLE ELSE i / 7.0 - 100 END`)} AS f64,
  ${nul(16, `DATE '1970-01-01' + ((i * 13) % 40000 - 10000)::INTEGER`)} AS dt,
  ${nul(17, `make_timestamp((hash(i) % 4000000000000000)::BIGINT - 1000000000000000)`)} AS ts,
  ${nul(18, `make_timestamp((hash(i) % 4000000000000000)::BIGINT - 1000000000000000)::TIMESTAMP_MS`)} AS ts_ms,
  ${nul(19, `make_timestamp((hash(i) % 4000000000000000)::BIGINT)::TIMESTAMP_NS`)} AS ts_ns,
  ${nul(20, `make_timestamp((hash(i) % 4000000000000000)::BIGINT)::TIMESTAMPTZ`)} AS tstz,
  ${nul(21, `TIME '00:00:00' + to_microseconds((hash(i) % 86400000000)::BIGINT)`)} AS tm,
  ${nul(22, '((i % 19999) - 9999)::DECIMAL(8,0) / 100')}::DECIMAL(4,2) AS d4,
  ${nul(23, '(hash(i) % 1999999999)::DECIMAL(18,0) / 1000 - 999999')}::DECIMAL(9,3) AS d9,
  ${nul(24, '((hash(i) >> 4)::DECIMAL(38,0) - 576460752303423487) / 100000')}::DECIMAL(18,5) AS d18,
  ${nul(25, '(hash(i)::DECIMAL(38,0) * 1000003 - 9000000000000000000000000) / 10000')}::DECIMAL(30,4) AS d30,
  ${nul(26, '(hash(i)::DECIMAL(38,0) * -123456789 + 42) / 10000000000')}::DECIMAL(38,10) AS d38,
  ${nul(27, `'cat_' || (i % 17)`)} AS s_low,
  ${nul(28, 'md5(i::VARCHAR) || md5((i * 3)::VARCHAR)')} AS s_high,
  ${nul(29, `CASE i % 5 WHEN 0 THEN '' ELSE 'x' || repeat('y', (i % 50)::INTEGER) END`)} AS s_var,
  ${nul(30, `'héllo ☃ ' || i`)} AS s_utf8,
  ${nul(31, 'from_hex(md5(i::VARCHAR))')} AS bl,
  NULL::INTEGER AS all_null
FROM range(${n}) t(i)`;

async function duckFile(name, select, options) {
  const path = join(outdir, `${name}.parquet`);
  await con.run(`COPY (${select}) TO '${path}' (FORMAT parquet${options ? ', ' + options : ''})`);
  files.push(name);
}

for (const codec of ['uncompressed', 'snappy', 'gzip', 'zstd', 'lz4']) {
  for (const v of ['V1', 'V2']) {
    await duckFile(`duck_${codec}_${v.toLowerCase()}`, typesSelect(3000),
      `COMPRESSION ${codec}, PARQUET_VERSION ${v}, ROW_GROUP_SIZE 1000`);
  }
}
// One row group whose chunks are each one page.
await duckFile('duck_onepage', typesSelect(400), 'COMPRESSION snappy');
// Zero rows: a footer with a schema and no row groups.
await duckFile('duck_empty', `${typesSelect(10)} LIMIT 0`, 'COMPRESSION zstd');
// Several row groups of the default size, several pages per chunk.
await duckFile('duck_big', `SELECT i::BIGINT AS id, 'k' || (i % 97) AS s_low,
  CASE WHEN i % 101 = 0 THEN NULL ELSE md5(i::VARCHAR) END AS s_high,
  (i * 0.5)::DOUBLE AS x FROM range(260000) t(i)`, 'COMPRESSION zstd, PARQUET_VERSION V2');

// Nested columns beside a flat one: not in the manifest; the flat one and the
// LIST read (as an Array), the reader refuses the MAP by name.
await con.run(`COPY (SELECT 1 AS a, [1, 2] AS l, MAP {'k': 1} AS m) TO '${join(outdir, 'nested.parquet')}' (FORMAT parquet)`);

// ---- hyparquet-writer files (data pages v2) -------------------------------
function gzipMulti(bytes) {
  // Two gzip members back to back: a reader must not stop after the first.
  const half = bytes.length >> 1;
  const a = gzipSync(bytes.subarray(0, half)), b = gzipSync(bytes.subarray(half));
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

function hyFile(name, opts) {
  const path = join(outdir, `${name}.parquet`);
  hyw.parquetWriteFile({ filename: path, compressors: { GZIP: gzipMulti }, ...opts });
  files.push(name);
}

const N = 2500;
const range = (f) => Array.from({ length: N }, (_, i) => f(i));
const withNulls = (k, f) => range((i) => (i % k === 1 ? null : f(i)));
const big = (i) => (BigInt(i) * 0x9E3779B97F4A7C15n) % (1n << 63n) * (i % 2 ? -1n : 1n);

for (const codec of ['UNCOMPRESSED', 'SNAPPY', 'GZIP']) {
  hyFile(`hy_enc_${codec.toLowerCase()}`, {
    codec,
    rowGroupSize: [700, 1000],
    pageSize: 2048,
    columnData: [
      { name: 'i32_delta', type: 'INT32', encoding: 'DELTA_BINARY_PACKED', data: withNulls(7, (i) => (i * 7919) % 100000 - 50000) },
      { name: 'i64_delta', type: 'INT64', encoding: 'DELTA_BINARY_PACKED', data: withNulls(9, big) },
      { name: 'i32_sorted_delta', type: 'INT32', encoding: 'DELTA_BINARY_PACKED', nullable: false, data: range((i) => i * 3) },
      { name: 's_dlba', type: 'STRING', encoding: 'DELTA_LENGTH_BYTE_ARRAY', data: withNulls(5, (i) => 'v' + 'z'.repeat(i % 37) + i) },
      { name: 's_dba', type: 'STRING', encoding: 'DELTA_BYTE_ARRAY', data: withNulls(6, (i) => `prefix/common/${Math.floor(i / 10)}/${i % 10}`) },
      { name: 'f_bss', type: 'FLOAT', encoding: 'BYTE_STREAM_SPLIT', data: withNulls(4, (i) => Math.fround(i * 0.25 - 100)) },
      { name: 'd_bss', type: 'DOUBLE', encoding: 'BYTE_STREAM_SPLIT', data: withNulls(8, (i) => i / 3 - 400) },
      { name: 'b_rle', type: 'BOOLEAN', encoding: 'RLE', data: withNulls(3, (i) => (i >> 3) % 2 === 0) },
      { name: 'b_plain', type: 'BOOLEAN', encoding: 'PLAIN', nullable: false, data: range((i) => i % 3 === 0) },
      { name: 's_dict', type: 'STRING', encoding: 'RLE_DICTIONARY', data: withNulls(10, (i) => ['red', 'green', 'blue', ''][i % 4]) },
      { name: 's_plain_req', type: 'STRING', encoding: 'PLAIN', nullable: false, data: range((i) => `row ${i}`) },
      { name: 'i64_plain', type: 'INT64', encoding: 'PLAIN', data: withNulls(11, (i) => BigInt(i) - 1000n) },
      { name: 'ts_ms', type: 'TIMESTAMP', data: withNulls(12, (i) => new Date(1_600_000_000_000 + i * 86_400_123)) },
      { name: 'h16', type: 'FLOAT16', data: withNulls(13, (i) => [0, 1, -2.5, 65504, 0.099975586, -0][i % 6]) },
      { name: 'bin', type: 'BYTE_ARRAY', data: withNulls(14, (i) => new Uint8Array([i & 255, 0, 255, (i >> 8) & 255])) },
    ],
  });
}
// Converted types and decimals through an explicit schema.
hyFile('hy_types', {
  codec: 'SNAPPY',
  rowGroupSize: 1000,
  schema: [
    { name: 'root', num_children: 6 },
    { name: 'i8', type: 'INT32', converted_type: 'INT_8', repetition_type: 'OPTIONAL' },
    { name: 'u16', type: 'INT32', converted_type: 'UINT_16', repetition_type: 'OPTIONAL' },
    { name: 'u64', type: 'INT64', converted_type: 'UINT_64', repetition_type: 'REQUIRED' },
    { name: 'dt', type: 'INT32', converted_type: 'DATE', repetition_type: 'OPTIONAL' },
    { name: 'dec_flba', type: 'FIXED_LEN_BYTE_ARRAY', type_length: 9, converted_type: 'DECIMAL', scale: 3, precision: 20, repetition_type: 'OPTIONAL' },
    { name: 'dec_i32', type: 'INT32', converted_type: 'DECIMAL', scale: 2, precision: 9, repetition_type: 'OPTIONAL' },
  ],
  columnData: [
    { name: 'i8', data: withNulls(5, (i) => (i % 256) - 128) },
    { name: 'u16', data: withNulls(6, (i) => (i * 31) % 65536) },
    { name: 'u64', data: range((i) => (BigInt(i) * 0x9E3779B97F4A7C15n) % (1n << 64n)) },
    { name: 'dt', data: withNulls(7, (i) => new Date(Date.UTC(1950, 0, 1) + i * 86400000 * 11)) },
    { name: 'dec_flba', data: withNulls(8, (i) => (i % 2 ? -1 : 1) * (i * 1234567.125 + 0.5)) },
    { name: 'dec_i32', data: withNulls(9, (i) => (i - 1200) * 1.25) },
  ],
});

// ---- reference dumps ------------------------------------------------------
function exprFor(name, type) {
  const c = `"${name.replaceAll('"', '""')}"`;
  if (type === 'BOOLEAN') return `CAST(${c} AS INTEGER)::VARCHAR`;
  if (/^(TINYINT|SMALLINT|INTEGER|BIGINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|HUGEINT)$/.test(type)) return `${c}::VARCHAR`;
  if (type === 'FLOAT' || type === 'DOUBLE') return `${c}::DOUBLE`; // converted in JS
  if (type === 'DATE') return `(${c} - DATE '1970-01-01')::VARCHAR`;
  if (type.startsWith('TIMESTAMP')) return `epoch_ns(${c})::VARCHAR`;
  if (type === 'TIME') return `epoch_us(${c})::VARCHAR`;
  if (type.startsWith('DECIMAL')) return `${c}::VARCHAR`;
  if (type === 'VARCHAR' || type === 'BLOB') return `hex(${c})`;
  throw new Error(`no canonical form for DuckDB type ${type} (column ${name})`);
}

function doubleHex(x) {
  if (Number.isNaN(x)) return 'nan';
  const dv = new DataView(new ArrayBuffer(8));
  dv.setFloat64(0, x, true);
  return dv.getBigUint64(0, true).toString(16).padStart(16, '0');
}

for (const name of files) {
  const path = join(outdir, `${name}.parquet`);
  const desc = (await con.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${path}')`)).getRowsJS();
  const exprs = desc.map(([n, t]) => exprFor(n, t));
  const res = await con.runAndReadAll(
    `SELECT ${exprs.join(', ')} FROM read_parquet('${path}', file_row_number = true) ORDER BY file_row_number`);
  const cols = res.getColumnsJS();
  const nrows = cols.length ? cols[0].length : 0;
  const lines = [`rows ${nrows}`];
  desc.forEach(([n, t], k) => {
    lines.push(`col ${n}\t${t}`);
    const isFloat = t === 'FLOAT' || t === 'DOUBLE';
    for (const v of cols[k] ?? []) lines.push(v === null ? '\\N' : isFloat ? doubleHex(v) : String(v));
  });
  writeFileSync(join(outdir, `${name}.ref`), lines.join('\n') + '\n');
}
writeFileSync(join(outdir, 'manifest.txt'), files.join('\n') + '\n');
con.closeSync();
inst.closeSync();
console.log(`wrote ${files.length} files to ${outdir}`);
