// SPDX-License-Identifier: Apache-2.0
//
// gen.mjs: datasets and expected results for tests/integration/engine. Writes,
// into OUTDIR, Stack-Overflow-shaped posts (one Parquet file of several row
// groups, the same rows cut into 12 small Parquet files, and CSVWithNames /
// TSVWithNames / plain CSV / JSONEachRow / gzip / zstd copies), then runs the
// table below: each ClickHouse-dialect query (what the engine runs) has a
// hand-written DuckDB equivalent (the oracle, @duckdb/node-api), whose result
// goes to OUTDIR/<name>.expected as TSV. OUTDIR/cases.tsv (and cases_local.tsv,
// the cases one server runs but s3Cluster does not split) lists
// name<TAB>flags<TAB>ClickHouse SQL; flags: 'sorted' = compare as a multiset
// (no ORDER BY), '-' otherwise. `{D}` in a query is OUTDIR.
//
//   node gen.mjs OUTDIR
//
// Where ClickHouse and DuckDB differ, the DuckDB side is written to give
// ClickHouse's answer, and the note says how: ClickHouse is the spec.
// Exits 77 (printing why) when node packages are missing.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { loadDuckDB, loadNpm } from '../../../bench/duckdb.mjs';
import { arrayCases, arrayData, arrayLocalCases, arrayOtherWriterData } from './cases_array.mjs';
import { sqlfnCases, sqlfnData } from './cases_sqlfn.mjs';
import { duckText } from './duck_fmt.mjs';

const duck = await loadDuckDB();
const D = process.argv[2];
if (!D) {
  console.error('usage: node gen.mjs OUTDIR');
  process.exit(2);
}
mkdirSync(join(D, 'small'), { recursive: true });
const inst = await duck.DuckDBInstance.create(':memory:', {
  extension_directory: join(D, 'duckdb_extensions'), threads: '2' });
const con = await inst.connect();

const N = 200000;
await con.run(`CREATE TABLE posts AS SELECT
  i::BIGINT AS Id,
  (1 + i % 3)::INTEGER AS PostTypeId,
  TIMESTAMP '2015-01-01 00:00:00' + to_seconds(i * 613) AS CreationDate,
  ((hash(i) % 200)::INTEGER - 50) AS Score,
  CASE WHEN i % 7 = 3 THEN NULL ELSE (hash(i * 3) % 100000)::BIGINT END AS ViewCount,
  CASE WHEN i % 11 = 5 THEN NULL ELSE (hash(i * 5) % 5000)::BIGINT END AS OwnerUserId,
  CASE WHEN i % 5 = 0 THEN '' WHEN i % 5 = 1 THEN 'anon'
       ELSE 'User_' || ((hash(i * 7) % 300))::VARCHAR END AS OwnerDisplayName,
  '<tag' || (i % 13)::VARCHAR || '><t' || (i % 4)::VARCHAR || '>' AS Tags,
  CASE WHEN i % 9 = 0 THEN NULL ELSE 'How do I ' || (ARRAY['sort','parse','Join','cache','Query'])[1 + i % 5] || ' x' || (i % 97)::VARCHAR || '?' END AS Title,
  (DATE '2015-01-01' + (i % 3000)::INTEGER) AS Day,
  (i % 1000) / 8.0 AS Ratio
FROM range(${N}) t(i)`);
await con.run(`COPY posts TO '${D}/posts.parquet' (FORMAT parquet, ROW_GROUP_SIZE 30000)`);
for (let k = 0; k < 12; k++)
  await con.run(`COPY (SELECT * FROM posts WHERE Id % 12 = ${k}) TO '${D}/small/part_${String(k).padStart(2, '0')}.parquet' (FORMAT parquet, COMPRESSION zstd)`);
const T = `SELECT Id, PostTypeId, strftime(CreationDate, '%Y-%m-%d %H:%M:%S') AS CreationDate, Score, ViewCount, OwnerDisplayName, Title FROM posts WHERE Id < 20000`;
await con.run(`COPY (${T}) TO '${D}/posts.csv' (HEADER true)`);
await con.run(`COPY (${T}) TO '${D}/posts.tsv' (HEADER true, DELIMITER '\t')`);
await con.run(`COPY (${T}) TO '${D}/posts_plain.csv' (HEADER false)`);
await con.run(`COPY (${T}) TO '${D}/posts.ndjson' (FORMAT json)`);
await con.run(`COPY (${T}) TO '${D}/posts.csv.zst' (HEADER true, COMPRESSION zstd)`);
const csvText = (await import('node:fs')).readFileSync(`${D}/posts.csv`);
writeFileSync(`${D}/posts.csv.gz`, gzipSync(csvText));
writeFileSync(`${D}/posts_csv_gz.bin`, gzipSync(csvText));
await con.run(`CREATE VIEW t AS ${T}`);
// malformed inputs, for the error tests
writeFileSync(`${D}/bad_quote.csv`, 'a,b\n1,"x\n2,y\n');
writeFileSync(`${D}/bad_line.ndjson`, '{"a": 1}\n{"a": 2}\n{"a": 3,, }\n');
writeFileSync(`${D}/bad_value.csv`, 'a,b\n1,2\n3,4\nzz,5\n');
mkdirSync(join(D, 'mixed'), { recursive: true });
await con.run(`COPY (SELECT Id, Score FROM posts LIMIT 10) TO '${D}/mixed/a.parquet' (FORMAT parquet)`);
await con.run(`COPY (SELECT Id FROM posts LIMIT 10) TO '${D}/mixed/b.parquet' (FORMAT parquet)`);
// a Parquet LIST column (DuckDB's list) beside a flat one
await con.run(`COPY (SELECT Id, [Id, Score] AS L FROM posts LIMIT 10) TO '${D}/list.parquet' (FORMAT parquet)`);

// decimals: DECIMAL(12,2) and (4,1) and (9,3) as INT64 / INT32, (30,4) as
// FIXED_LEN_BYTE_ARRAY, with NULLs; a glob of three files, one of them empty; one row
await con.run(`CREATE TABLE dec AS SELECT i::BIGINT AS Id,
  (((hash(i) % 10000000000)::BIGINT - 5000000000) * 0.01)::DECIMAL(12,2) AS Price,
  CASE WHEN i % 13 = 0 THEN NULL ELSE ((i % 200000) * 0.001)::DECIMAL(9,3) END AS Qty,
  CASE WHEN i % 7 = 2 THEN NULL ELSE ((hash(i * 3) % 1000000000000)::BIGINT * 0.0001)::DECIMAL(30,4) END AS Big,
  (((i % 1999) - 999) * 0.1)::DECIMAL(4,1) AS Small
FROM range(60000) t(i)`);
await con.run(`COPY dec TO '${D}/dec.parquet' (FORMAT parquet, ROW_GROUP_SIZE 20000)`);
mkdirSync(join(D, 'dec_glob'), { recursive: true });
await con.run(`COPY (SELECT * FROM dec WHERE Id < 1000) TO '${D}/dec_glob/a.parquet' (FORMAT parquet)`);
await con.run(`COPY (SELECT * FROM dec WHERE Id < 0) TO '${D}/dec_glob/b.parquet' (FORMAT parquet)`);
await con.run(`COPY (SELECT * FROM dec WHERE Id >= 1000 AND Id < 1500) TO '${D}/dec_glob/c.parquet' (FORMAT parquet)`);
await con.run(`COPY (SELECT * FROM dec WHERE Id = 42) TO '${D}/dec_one.parquet' (FORMAT parquet)`);

const P = `file('{D}/posts.parquet')`, Q = `'${D}/posts.parquet'`;
const DP = `file('{D}/dec.parquet')`, DQ = `'${D}/dec.parquet'`;
// [name, ClickHouse SQL, DuckDB SQL, flags, note]
const cases = [
  ['seed', `SELECT OwnerDisplayName, count() AS num_posts FROM ${P} WHERE OwnerDisplayName NOT IN ('', 'anon') GROUP BY OwnerDisplayName ORDER BY num_posts DESC, OwnerDisplayName LIMIT 5`,
    `SELECT OwnerDisplayName, count(*) AS num_posts FROM ${Q} WHERE OwnerDisplayName NOT IN ('', 'anon') GROUP BY OwnerDisplayName ORDER BY num_posts DESC, OwnerDisplayName LIMIT 5`],
  ['sum_count', `SELECT sum(Score), count() FROM ${P}`, `SELECT sum(Score), count(*) FROM ${Q}`],
  ['pruned', `SELECT count(), sum(Score), min(Id), max(Id) FROM ${P} WHERE Id >= 150000 AND Id < 151000`,
    `SELECT count(*), sum(Score), min(Id), max(Id) FROM ${Q} WHERE Id >= 150000 AND Id < 151000`],
  ['every_agg', `SELECT count(), count(ViewCount), sum(ViewCount), avg(ViewCount), min(ViewCount), max(ViewCount), uniqExact(OwnerUserId), uniq(OwnerDisplayName), min(Title), max(Title), avg(Ratio) FROM ${P}`,
    `SELECT count(*), count(ViewCount), sum(ViewCount), avg(ViewCount), min(ViewCount), max(ViewCount), count(DISTINCT OwnerUserId), count(DISTINCT OwnerDisplayName), min(Title), max(Title), avg(Ratio) FROM ${Q}`,
    '-', 'uniq/uniqExact skip NULL like count(DISTINCT)'],
  ['group_string', `SELECT OwnerDisplayName, count(), sum(Score), max(CreationDate) FROM ${P} GROUP BY OwnerDisplayName ORDER BY OwnerDisplayName`,
    `SELECT OwnerDisplayName, count(*), sum(Score), strftime(max(CreationDate), '%Y-%m-%d %H:%M:%S.%f') FROM ${Q} GROUP BY OwnerDisplayName ORDER BY OwnerDisplayName`,
    '-', 'DateTime64(6) prints 6 fraction digits in ClickHouse'],
  // the group table's key layouts: long string keys (stored out of line), a string key
  // that is not the last key, two string keys, NULL string keys
  ['group_long_key', `SELECT Title, count() AS c FROM ${P} GROUP BY Title ORDER BY Title NULLS LAST`,
    `SELECT Title, count(*) AS c FROM ${Q} GROUP BY Title ORDER BY Title NULLS LAST`],
  ['group_string_first', `SELECT OwnerDisplayName, PostTypeId, count() FROM ${P} GROUP BY OwnerDisplayName, PostTypeId ORDER BY OwnerDisplayName NULLS LAST, PostTypeId`,
    `SELECT OwnerDisplayName, PostTypeId, count(*) FROM ${Q} GROUP BY OwnerDisplayName, PostTypeId ORDER BY OwnerDisplayName NULLS LAST, PostTypeId`],
  ['group_two_strings', `SELECT OwnerDisplayName, Title, count() FROM ${P} WHERE PostTypeId = 1 GROUP BY OwnerDisplayName, Title ORDER BY OwnerDisplayName NULLS LAST, Title NULLS LAST`,
    `SELECT OwnerDisplayName, Title, count(*) FROM ${Q} WHERE PostTypeId = 1 GROUP BY OwnerDisplayName, Title ORDER BY OwnerDisplayName NULLS LAST, Title NULLS LAST`],
  ['group_int', `SELECT PostTypeId, count(), avg(Score), any(PostTypeId) FROM ${P} GROUP BY PostTypeId ORDER BY PostTypeId`,
    `SELECT PostTypeId, count(*), avg(Score), any_value(PostTypeId) FROM ${Q} GROUP BY PostTypeId ORDER BY PostTypeId`],
  ['group_date', `SELECT toStartOfMonth(CreationDate) AS m, count() AS c, sum(Score) FROM ${P} GROUP BY m ORDER BY m LIMIT 20`,
    `SELECT strftime(date_trunc('month', CreationDate), '%Y-%m-%d') AS m, count(*) AS c, sum(Score) FROM ${Q} GROUP BY m ORDER BY m LIMIT 20`],
  ['group_expr_pos', `SELECT Score % 10 AS k, toYear(Day) AS y, count() FROM ${P} GROUP BY 1, 2 ORDER BY 1, 2`,
    `SELECT Score % 10 AS k, year(Day) AS y, count(*) FROM ${Q} GROUP BY 1, 2 ORDER BY 1, 2`,
    '-', "'%' truncates toward zero in both"],
  ['null_where', `SELECT count(), sum(Score) FROM ${P} WHERE ViewCount IS NULL OR OwnerUserId IS NULL`,
    `SELECT count(*), sum(Score) FROM ${Q} WHERE ViewCount IS NULL OR OwnerUserId IS NULL`],
  ['null_where_cmp', `SELECT count() FROM ${P} WHERE ViewCount > 50000`, `SELECT count(*) FROM ${Q} WHERE ViewCount > 50000`],
  ['null_group_key', `SELECT OwnerUserId % 4 AS k, count(), count(OwnerUserId), avg(ViewCount) FROM ${P} GROUP BY k ORDER BY k NULLS FIRST`,
    `SELECT OwnerUserId % 4 AS k, count(*), count(OwnerUserId), avg(ViewCount) FROM ${Q} GROUP BY k ORDER BY k NULLS FIRST`],
  ['null_agg_all_null', `SELECT PostTypeId, sum(ViewCount), min(ViewCount), avg(ViewCount), count(ViewCount) FROM ${P} WHERE ViewCount IS NULL GROUP BY PostTypeId ORDER BY PostTypeId`,
    `SELECT PostTypeId, sum(ViewCount), min(ViewCount), avg(ViewCount), count(ViewCount) FROM ${Q} WHERE ViewCount IS NULL GROUP BY PostTypeId ORDER BY PostTypeId`],
  ['null_sum_global', `SELECT sum(ViewCount), sum(Ratio), sum(if(Id % 2 = 0, NULL, ViewCount)) FROM ${P} WHERE ViewCount IS NULL OR Id < 1000`,
    `SELECT sum(ViewCount), sum(Ratio), sum(CASE WHEN Id % 2 = 0 THEN NULL ELSE ViewCount END) FROM ${Q} WHERE ViewCount IS NULL OR Id < 1000`],
  ['null_sum_global_all_null', `SELECT sum(ViewCount), count() FROM ${P} WHERE ViewCount IS NULL`,
    `SELECT sum(ViewCount), count(*) FROM ${Q} WHERE ViewCount IS NULL`, '-', 'sum of a Nullable over only NULLs is NULL'],
  ['order_ties', `SELECT Score, Id FROM ${P} WHERE Id < 3000 ORDER BY Score DESC, Id ASC LIMIT 25`,
    `SELECT Score, Id FROM ${Q} WHERE Id < 3000 ORDER BY Score DESC, Id ASC LIMIT 25`],
  ['order_nulls', `SELECT ViewCount, Id FROM ${P} WHERE Id < 100 ORDER BY ViewCount DESC NULLS FIRST, Id LIMIT 30`,
    `SELECT ViewCount, Id FROM ${Q} WHERE Id < 100 ORDER BY ViewCount DESC NULLS FIRST, Id LIMIT 30`],
  ['order_nulls_last', `SELECT Title, Id FROM ${P} WHERE Id < 60 ORDER BY Title, Id`,
    `SELECT Title, Id FROM ${Q} WHERE Id < 60 ORDER BY Title NULLS LAST, Id`,
    '-', 'ClickHouse puts NULLs last by default in both directions'],
  ['limit_offset', `SELECT Id, Score FROM ${P} ORDER BY Score, Id LIMIT 10 OFFSET 995`,
    `SELECT Id, Score FROM ${Q} ORDER BY Score, Id LIMIT 10 OFFSET 995`],
  ['topn_big', `SELECT Id, Ratio FROM ${P} ORDER BY Ratio DESC, Id DESC LIMIT 50`,
    `SELECT Id, Ratio FROM ${Q} ORDER BY Ratio DESC, Id DESC LIMIT 50`],
  ['having', `SELECT OwnerDisplayName AS n, count() AS c FROM ${P} GROUP BY n HAVING c > 570 AND n != '' ORDER BY c DESC, n`,
    `SELECT OwnerDisplayName AS n, count(*) AS c FROM ${Q} GROUP BY n HAVING count(*) > 570 AND n != '' ORDER BY c DESC, n`],
  ['strings', `SELECT Id, lower(Title), upper(OwnerDisplayName), length(Title), substring(Title, 3, 5), substring(Tags, -4), concat(OwnerDisplayName, '/', Tags), startsWith(Title, 'How'), endsWith(Tags, '<t1>'), position(Title, 'x') FROM ${P} WHERE Id < 40 ORDER BY Id`,
    `SELECT Id, lower(Title), upper(OwnerDisplayName), strlen(Title), substring(Title, 3, 5), substring(Tags, -4), CASE WHEN OwnerDisplayName IS NULL THEN NULL ELSE OwnerDisplayName || '/' || Tags END, starts_with(Title, 'How')::INT, ends_with(Tags, '<t1>')::INT, strpos(Title, 'x') FROM ${Q} WHERE Id < 40 ORDER BY Id`,
    '-', 'length/substring/position count bytes in ClickHouse (ASCII data here, so chars = bytes); predicates return UInt8'],
  ['like_ilike', `SELECT Title LIKE '%join%' AS a, Title ILIKE '%join%' AS b, Title NOT LIKE 'How do I _ort%' AS c, count() FROM ${P} GROUP BY a, b, c ORDER BY a, b, c`,
    `SELECT (Title LIKE '%join%')::INT AS a, (Title ILIKE '%join%')::INT AS b, (Title NOT LIKE 'How do I _ort%')::INT AS c, count(*) FROM ${Q} GROUP BY a, b, c ORDER BY a NULLS LAST, b NULLS LAST, c NULLS LAST`],
  ['conditionals', `SELECT Id, if(Score > 0, 'pos', 'neg'), multiIf(Score < -20, 'low', Score < 50, 'mid', 'high'), CASE PostTypeId WHEN 1 THEN 'q' WHEN 2 THEN 'a' ELSE 'o' END, CASE WHEN ViewCount IS NULL THEN -1 ELSE ViewCount END, coalesce(ViewCount, OwnerUserId, 0) FROM ${P} WHERE Id < 50 ORDER BY Id`,
    `SELECT Id, CASE WHEN Score > 0 THEN 'pos' ELSE 'neg' END, CASE WHEN Score < -20 THEN 'low' WHEN Score < 50 THEN 'mid' ELSE 'high' END, CASE PostTypeId WHEN 1 THEN 'q' WHEN 2 THEN 'a' ELSE 'o' END, CASE WHEN ViewCount IS NULL THEN -1 ELSE ViewCount END, coalesce(ViewCount, OwnerUserId, 0) FROM ${Q} WHERE Id < 50 ORDER BY Id`],
  ['arith', `SELECT Id, Score + Id, Score - 100, Score * 3, Score / 7, Id % 7, -Score, abs(Score), round(Ratio, 1), round(Score / 7, 2), CAST(Score AS Float64) / 2, Id::String FROM ${P} WHERE Id < 30 ORDER BY Id`,
    `SELECT Id, Score + Id, Score - 100, Score * 3, Score / 7, Id % 7, -Score, abs(Score), round_even(Ratio, 1), round_even(Score / 7, 2), CAST(Score AS DOUBLE) / 2, Id::VARCHAR FROM ${Q} WHERE Id < 30 ORDER BY Id`,
    '-', "ClickHouse rounds floats half to even (banker's): DuckDB round_even; '/' is always Float64"],
  ['dates', `SELECT Id, toYear(CreationDate), toMonth(CreationDate), toDate(CreationDate), toStartOfDay(CreationDate), dateDiff('day', Day, toDate(CreationDate)), dateDiff('month', Day, CreationDate), dateDiff('hour', toDate('2015-01-01'), CreationDate), Day + 1 FROM ${P} WHERE Id % 997 = 1 ORDER BY Id LIMIT 40`,
    `SELECT Id, year(CreationDate), month(CreationDate), strftime(CreationDate::DATE, '%Y-%m-%d'), strftime(date_trunc('day', CreationDate), '%Y-%m-%d %H:%M:%S.%f'), date_diff('day', Day, CreationDate::DATE), date_diff('month', Day, CreationDate), date_diff('hour', TIMESTAMP '2015-01-01', CreationDate), strftime(Day + 1, '%Y-%m-%d') FROM ${Q} WHERE Id % 997 = 1 ORDER BY Id LIMIT 40`,
    '-', 'dateDiff counts unit boundaries crossed, as DuckDB date_diff does'],
  ['date_filter', `SELECT count(), min(Id) FROM ${P} WHERE CreationDate >= '2016-06-01 00:00:00' AND Day < '2020-01-01'`,
    `SELECT count(*), min(Id) FROM ${Q} WHERE CreationDate >= TIMESTAMP '2016-06-01 00:00:00' AND Day < DATE '2020-01-01'`,
    '-', 'a string literal against a date column compares as a date'],
  ['group_int_many', `SELECT count(), sum(c), sum(s), max(c) FROM (SELECT ViewCount, count() AS c, sum(Score) AS s FROM ${P} GROUP BY ViewCount)`,
    `SELECT count(*), sum(c), sum(s), max(c) FROM (SELECT ViewCount, count(*) AS c, sum(Score) AS s FROM ${Q} GROUP BY ViewCount)`],
  ['group_int_few', `SELECT OwnerUserId % 50 AS u, count(), sum(Score), countIf(Score > 0) FROM ${P} GROUP BY u ORDER BY u NULLS LAST`,
    `SELECT OwnerUserId % 50 AS u, count(*), sum(Score), count(*) FILTER (WHERE Score > 0) FROM ${Q} GROUP BY u ORDER BY u NULLS LAST`],
  ['in_list', `SELECT PostTypeId, count() FROM ${P} WHERE Score IN (1, 2, 3, 100) AND PostTypeId NOT IN (2) GROUP BY PostTypeId ORDER BY PostTypeId`,
    `SELECT PostTypeId, count(*) FROM ${Q} WHERE Score IN (1, 2, 3, 100) AND PostTypeId NOT IN (2) GROUP BY PostTypeId ORDER BY PostTypeId`],
  ['alias_where', `SELECT Score * 2 AS s2, Id FROM ${P} WHERE s2 > 290 ORDER BY Id LIMIT 10`,
    `SELECT Score * 2 AS s2, Id FROM ${Q} WHERE Score * 2 > 290 ORDER BY Id LIMIT 10`, '-', 'ClickHouse lets WHERE use SELECT aliases'],
  ['no_order', `SELECT Id, Score FROM ${P} WHERE Id % 10000 = 7`, `SELECT Id, Score FROM ${Q} WHERE Id % 10000 = 7`, 'sorted'],
  ['star', `SELECT * FROM ${P} WHERE Id IN (0, 3, 12345) ORDER BY Id`,
    `SELECT Id, PostTypeId, strftime(CreationDate, '%Y-%m-%d %H:%M:%S.%f'), Score, ViewCount, OwnerUserId, OwnerDisplayName, Tags, Title, strftime(Day, '%Y-%m-%d'), Ratio FROM ${Q} WHERE Id IN (0, 3, 12345) ORDER BY Id`],
  ['many_small_files', `SELECT OwnerDisplayName, count() AS num_posts FROM file('{D}/small/part_*.parquet') WHERE OwnerDisplayName NOT IN ('', 'anon') GROUP BY OwnerDisplayName ORDER BY num_posts DESC, OwnerDisplayName LIMIT 7`,
    `SELECT OwnerDisplayName, count(*) AS num_posts FROM '${D}/small/part_*.parquet' WHERE OwnerDisplayName NOT IN ('', 'anon') GROUP BY OwnerDisplayName ORDER BY num_posts DESC, OwnerDisplayName LIMIT 7`],
  ['small_files_glob_braces', `SELECT count(), sum(Score) FROM file('{D}/small/part_{00..05}.parquet')`,
    `SELECT count(*), sum(Score) FROM read_parquet(['${D}/small/part_00.parquet','${D}/small/part_01.parquet','${D}/small/part_02.parquet','${D}/small/part_03.parquet','${D}/small/part_04.parquet','${D}/small/part_05.parquet'])`],
  ['csv', `SELECT OwnerDisplayName, count(), sum(Score), max(CreationDate), count(ViewCount) FROM file('{D}/posts.csv') GROUP BY OwnerDisplayName ORDER BY 2 DESC, 1 LIMIT 10`,
    `SELECT OwnerDisplayName, count(*), sum(Score), max(CreationDate), count(ViewCount) FROM t GROUP BY OwnerDisplayName ORDER BY 2 DESC, 1 NULLS LAST LIMIT 10`,
    '-', 'the CSV header is detected and types inferred (CreationDate as DateTime)'],
  ['csv_with_names', `SELECT count(), sum(ViewCount), uniqExact(Title) FROM file('{D}/posts.csv', 'CSVWithNames')`,
    `SELECT count(*), sum(ViewCount), count(DISTINCT Title) FROM t`],
  ['tsv', `SELECT PostTypeId, count(), avg(Score) FROM file('{D}/posts.tsv', 'TSVWithNames') GROUP BY PostTypeId ORDER BY PostTypeId`,
    `SELECT PostTypeId, count(*), avg(Score) FROM t GROUP BY PostTypeId ORDER BY PostTypeId`],
  ['csv_plain', `SELECT c2, count(), sum(c4) FROM file('{D}/posts_plain.csv') GROUP BY c2 ORDER BY c2`,
    `SELECT PostTypeId, count(*), sum(Score) FROM t GROUP BY PostTypeId ORDER BY PostTypeId`, '-', 'no header: columns are c1, c2, ...'],
  ['ndjson', `SELECT OwnerDisplayName, count(), sum(ViewCount) FROM file('{D}/posts.ndjson') WHERE Title LIKE '%cache%' GROUP BY OwnerDisplayName ORDER BY 2 DESC, 1 LIMIT 8`,
    `SELECT OwnerDisplayName, count(*), sum(ViewCount) FROM t WHERE Title LIKE '%cache%' GROUP BY OwnerDisplayName ORDER BY 2 DESC, 1 NULLS LAST LIMIT 8`],
  ['csv_gz', `SELECT count(), sum(Score), min(CreationDate) FROM file('{D}/posts.csv.gz')`,
    `SELECT count(*), sum(Score), min(CreationDate) FROM t`],
  ['csv_zst', `SELECT count(), sum(Score), max(Id) FROM file('{D}/posts.csv.zst')`,
    `SELECT count(*), sum(Score), max(Id) FROM t`],
  ['settings', `SELECT count() FROM ${P} WHERE Score > 0 SETTINGS max_threads = 1, max_download_threads = 2, max_download_buffer_size = 1048576`,
    `SELECT count(*) FROM ${Q} WHERE Score > 0`],
  ['empty_result_agg', `SELECT count(), sum(coalesce(Score, 0)), avg(coalesce(Score, 0)), sum(Score) FROM ${P} WHERE Id < 0`,
    `SELECT count(*), 0, 'nan', NULL FROM ${Q} WHERE Id < 0`, '-', 'ClickHouse: over no rows sum of a non-Nullable is 0 and avg nan (DuckDB: NULL); of a Nullable, NULL'],
  // Decimal(P, S): exact, compared digit for digit ('exact'); ClickHouse prints no
  // trailing zeros (output_format_decimal_trailing_zeros = 0), so the DuckDB side's
  // decimals are printed without them (duck_fmt.mjs)
  ['dec_sum', `SELECT sum(Price), sum(Qty), sum(Big), sum(Small), count(Qty), count(Big) FROM ${DP}`,
    `SELECT sum(Price), sum(Qty), sum(Big), sum(Small), count(Qty), count(Big) FROM ${DQ}`, 'exact'],
  ['dec_minmax', `SELECT min(Price), max(Price), min(Qty), max(Qty), min(Big), max(Big), min(Small), max(Small) FROM ${DP}`,
    `SELECT min(Price), max(Price), min(Qty), max(Qty), min(Big), max(Big), min(Small), max(Small) FROM ${DQ}`, 'exact'],
  ['dec_group', `SELECT Id % 5 AS k, sum(Price), min(Qty), max(Big), sum(Small) FROM ${DP} GROUP BY k ORDER BY k`,
    `SELECT Id % 5 AS k, sum(Price), min(Qty), max(Big), sum(Small) FROM ${DQ} GROUP BY k ORDER BY k`, 'exact'],
  ['dec_group_key', `SELECT Small, count(), sum(Qty) FROM ${DP} WHERE Id < 5000 GROUP BY Small ORDER BY Small LIMIT 30`,
    `SELECT Small, count(*), sum(Qty) FROM ${DQ} WHERE Id < 5000 GROUP BY Small ORDER BY Small LIMIT 30`, 'exact'],
  ['dec_arith', `SELECT Id, Price + Qty, Price - Small, Price * Qty, -Price, Price * 3, Price + 1, Small * Small, abs(Small) FROM ${DP} WHERE Id < 300 ORDER BY Id`,
    `SELECT Id, Price + Qty, Price - Small, Price * Qty, -Price, Price * 3, Price + 1, Small * Small, abs(Small) FROM ${DQ} WHERE Id < 300 ORDER BY Id`,
    'exact', 'ClickHouse: + and - take the larger scale, * adds the scales, an integer counts as scale 0'],
  ['dec_div', `SELECT Id, Price / Qty, Price / 7, Qty / Small FROM ${DP} WHERE Id < 2000 AND Price > 0 AND Qty > 0 AND Small > 0 ORDER BY Id`,
    `SELECT Id, (Price * 100)::HUGEINT * 1000 // (Qty * 1000)::HUGEINT * 0.01, (Price * 100)::HUGEINT // 7 * 0.01, (Qty * 1000)::HUGEINT * 10 // (Small * 10)::HUGEINT * 0.001 FROM ${DQ} WHERE Id < 2000 AND Price > 0 AND Qty > 0 AND Small > 0 ORDER BY Id`,
    'exact', "ClickHouse's Decimal division keeps the dividend's scale and discards the digits below it (positive operands, so // is that truncation)"],
  ['dec_filter', `SELECT count(), sum(Price) FROM ${DP} WHERE Price > 1000.5 AND Qty <= 150 AND Small IN (1.5, -2.5, 3, 99.9) AND Big IS NOT NULL`,
    `SELECT count(*), sum(Price) FROM ${DQ} WHERE Price > 1000.5 AND Qty <= 150 AND Small IN (1.5, -2.5, 3, 99.9) AND Big IS NOT NULL`, 'exact'],
  ['dec_cmp_cols', `SELECT count() FROM ${DP} WHERE Qty > Small AND Price < Big`,
    `SELECT count(*) FROM ${DQ} WHERE Qty > Small AND Price < Big`, 'exact'],
  ['dec_order', `SELECT Id, Big, Price FROM ${DP} ORDER BY Big DESC NULLS LAST, Id LIMIT 12`,
    `SELECT Id, Big, Price FROM ${DQ} ORDER BY Big DESC NULLS LAST, Id LIMIT 12`, 'exact'],
  // toDecimal*(x, S) widening an integer or a Decimal (exact in both: no digits dropped)
  ['dec_to_decimal', `SELECT Id, toDecimal64(Id, 3), toDecimal128(Qty, 5), toDecimal64(Small, 2) FROM ${DP} WHERE Id < 300 ORDER BY Id`,
    `SELECT Id, Id::DECIMAL(18,3), Qty::DECIMAL(38,5), Small::DECIMAL(18,2) FROM ${DQ} WHERE Id < 300 ORDER BY Id`, 'exact'],
  ['dec_avg', `SELECT avg(Price), avg(Qty), avg(Big), avg(Small) FROM ${DP}`,
    `SELECT avg(Price)::DOUBLE, avg(Qty)::DOUBLE, avg(Big)::DOUBLE, avg(Small)::DOUBLE FROM ${DQ}`, '-', 'avg of a Decimal is Float64'],
  ['dec_null_sum', `SELECT sum(Qty), count() FROM ${DP} WHERE Qty IS NULL`,
    `SELECT sum(Qty), count(*) FROM ${DQ} WHERE Qty IS NULL`, 'exact', 'the sum of a Nullable over no values is NULL'],
  ['dec_glob', `SELECT count(), sum(Price), max(Qty), sum(Big) FROM file('{D}/dec_glob/*.parquet')`,
    `SELECT count(*), sum(Price), max(Qty), sum(Big) FROM '${D}/dec_glob/*.parquet'`, 'exact', 'one of the three files has no rows'],
  ['dec_one_row', `SELECT * FROM file('{D}/dec_one.parquet')`, `SELECT * FROM '${D}/dec_one.parquet'`, 'exact'],
  ['dec_cast', `SELECT Id, CAST(Price AS Decimal(18, 4)), CAST(Small AS Int32), CAST(Qty AS String), CAST(Id AS Decimal(10, 2)) FROM ${DP} WHERE Id < 40 ORDER BY Id`,
    `SELECT Id, CAST(Price AS DECIMAL(18, 4)), trunc(Small)::INTEGER, CASE WHEN Qty IS NULL THEN NULL ELSE rtrim(rtrim(Qty::VARCHAR, '0'), '.') END, CAST(Id AS DECIMAL(10,2)) FROM ${DQ} WHERE Id < 40 ORDER BY Id`,
    'exact', 'Decimal to an integer truncates toward zero; to a String prints as ClickHouse does'],
  // the virtual columns of file(): _path as listed, _file its name, _size, _time (mtime)
  ['virtual_cols', `SELECT _file, _path, _size, _time, count(), min(Id), sum(Price) FROM file('{D}/dec_glob/*.parquet') GROUP BY _file, _path, _size, _time ORDER BY _file`,
    `SELECT parse_filename(b.filename), b.filename, b.size, strftime(b.last_modified, '%Y-%m-%d %H:%M:%S'), count(*), min(Id), sum(Price) FROM read_parquet('${D}/dec_glob/*.parquet', filename = true) p JOIN read_blob('${D}/dec_glob/*.parquet') b ON p.filename = b.filename GROUP BY ALL ORDER BY 1`,
    'exact', 'the file without rows has no group'],
  ['virtual_filter', `SELECT count(), sum(Score) FROM file('{D}/small/part_*.parquet') WHERE _file IN ('part_03.parquet', 'part_07.parquet')`,
    `SELECT count(*), sum(Score) FROM read_parquet('${D}/small/part_*.parquet', filename = true) WHERE parse_filename(filename) IN ('part_03.parquet', 'part_07.parquet')`],
  ['virtual_text', `SELECT _file, count(), sum(Score) FROM file('{D}/posts.csv*') GROUP BY _file ORDER BY _file`,
    `SELECT f, count(*), sum(Score) FROM t, (VALUES ('posts.csv'), ('posts.csv.gz'), ('posts.csv.zst')) v(f) GROUP BY f ORDER BY f`,
    '-', 'plain, gzip and zstd copies of one CSV'],
  // file()'s structure and compression arguments
  ['structure_csv', `SELECT PostTypeId, count(), sum(Score), max(Day2), sum(Views) FROM file('{D}/posts_plain.csv', 'CSV', 'Id UInt64, PostTypeId UInt8, Day2 DateTime, Score Int32, Views Nullable(UInt32), Name String, Title Nullable(String)') GROUP BY PostTypeId ORDER BY PostTypeId`,
    `SELECT PostTypeId, count(*), sum(Score), max(CreationDate), sum(ViewCount) FROM t GROUP BY PostTypeId ORDER BY PostTypeId`,
    '-', 'plain CSV: the structure names the columns by position (no header row)'],
  ['structure_csv_decimal', `SELECT sum(Id), sum(CAST(Score AS Decimal(12, 2))) FROM file('{D}/posts.csv', 'CSVWithNames', 'Score Decimal(12, 2), Id Int64')`,
    `SELECT sum(Id), sum(Score)::DECIMAL(38,2) FROM t`, 'exact', 'CSVWithNames: by the header names'],
  ['structure_json', `SELECT count(), sum(ViewCount), min(Title) FROM file('{D}/posts.ndjson', 'JSONEachRow', 'ViewCount Nullable(Int64), Title Nullable(String)')`,
    `SELECT count(*), sum(ViewCount), min(Title) FROM t`],
  ['structure_parquet', `SELECT * FROM file('{D}/dec.parquet', 'Parquet', 'Small Decimal(4, 1), Id Int64') ORDER BY Id LIMIT 5`,
    `SELECT Small, Id FROM ${DQ} ORDER BY Id LIMIT 5`, 'exact', 'Parquet: the columns it names, in its order (the files keep their NULLs)'],
  ['compression_arg', `SELECT count(), sum(Score) FROM file('{D}/posts_csv_gz.bin', 'CSVWithNames', 'Score Int64', 'gzip')`,
    `SELECT count(*), sum(Score) FROM t`, '-', 'a gzip file whose name does not say so'],
  ...sqlfnCases(P, Q, D),
  ...arrayCases(P, Q, D),
];
await sqlfnData(con, D);
await arrayData(con, D);
arrayOtherWriterData(await loadNpm('hyparquet-writer'), D);

// cases.tsv: every server set-up runs them; cases_local.tsv: one server only
// (a subquery as the source, which s3Cluster does not split)
const local = new Set(['group_int_many']);
for (const [file, list0] of [['cases.tsv', cases.filter((c) => !local.has(c[0]))],
  ['cases_local.tsv', [...cases.filter((c) => local.has(c[0])), ...arrayLocalCases(P, Q, D)]]]) {
  let list = '';
  for (const [name, ch, dk, flags = '-'] of list0) {
    const sql = dk.replaceAll('{D}', D);
    const r = await con.runAndReadAll(sql);
    const rows = r.getRows().map((row) => row.map((v) => duckText(duck, v)).join('\t'));
    writeFileSync(join(D, `${name}.expected`), rows.map((l) => l + '\n').join(''));
    list += `${name}\t${flags}\t${ch.replaceAll('{D}', D)}\n`;
  }
  writeFileSync(join(D, file), list);
}
console.error(`gen.mjs: ${cases.length} cases, datasets in ${D}`);
