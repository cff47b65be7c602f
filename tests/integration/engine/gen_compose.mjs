// SPDX-License-Identifier: Apache-2.0
//
// gen_compose.mjs: datasets and expected results for test_compose_duckdb
// (subqueries, WITH, UNION ALL, joins, window functions). Writes, into
// OUTDIR, a fact table (facts.parquet: 60000 rows in row groups of 10000, a
// join key k with NULLs and duplicates, keys the dimension lacks), a
// dimension (dims.parquet: 1000 rows in one row group, k with NULLs, keys
// twice, keys no fact has), an empty dimension (empty.parquet), then runs the
// table below: each ClickHouse-dialect query has a hand-written DuckDB
// equivalent (the oracle, @duckdb/node-api) whose result goes to
// OUTDIR/<name>.expected as TSV; OUTDIR/cases.tsv lists
// name<TAB>flags<TAB>ClickHouse SQL ('sorted': compare as a multiset).
//
//   node gen_compose.mjs OUTDIR
//
// Where ClickHouse and DuckDB differ, the DuckDB side is written to give
// ClickHouse's answer, and the note says how: ClickHouse is the spec.
// Exits 77 (printing why) when node packages are missing.
import { createRequire } from 'node:module';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const nm = process.env.RINGCACHE_NODE_MODULES || join(here, '..', '..', '..', 'node_modules');
const req = createRequire(join(nm, 'noop.js'));
let duck;
try {
  duck = await import(pathToFileURL(req.resolve('@duckdb/node-api')).href);
} catch (e) {
  console.error(`SKIP: npm package @duckdb/node-api is not installed under ${nm}: ${e.message}`);
  process.exit(77);
}
const D = process.argv[2];
if (!D) {
  console.error('usage: node gen_compose.mjs OUTDIR');
  process.exit(2);
}
mkdirSync(D, { recursive: true });
const inst = await duck.DuckDBInstance.create(':memory:', { threads: '2' });
const con = await inst.connect();

await con.run(`CREATE TABLE facts AS SELECT
  i::BIGINT AS id,
  CASE WHEN i % 17 = 0 THEN NULL ELSE (hash(i) % 1200)::INTEGER END AS k,
  (hash(i * 3) % 1000)::BIGINT AS v,
  'c' || (i % 40)::VARCHAR AS s,
  ((i * 7919) % 100003)::BIGINT AS t
FROM range(60000) r(i)`);
await con.run(`CREATE TABLE dims AS SELECT
  j::BIGINT AS j,
  CASE WHEN j % 97 = 5 THEN NULL WHEN j % 50 = 0 THEN 5000 + j ELSE (j % 800)::INTEGER END AS k,
  'd' || j::VARCHAR AS name,
  (j * 1.5)::DOUBLE AS w,
  'c' || (j % 40)::VARCHAR AS s
FROM range(1000) r(j)`);
await con.run(`COPY facts TO '${D}/facts.parquet' (FORMAT parquet, ROW_GROUP_SIZE 10000)`);
await con.run(`COPY dims TO '${D}/dims.parquet' (FORMAT parquet)`);
await con.run(`COPY (SELECT * FROM dims WHERE false) TO '${D}/empty.parquet' (FORMAT parquet)`);

const F = `file('{D}/facts.parquet')`, DM = `file('{D}/dims.parquet')`, E = `file('{D}/empty.parquet')`;
const f = 'facts', d = 'dims', e = `(SELECT * FROM dims WHERE false)`;
const DK = `(SELECT * FROM ${DM} WHERE k < 800 OR k IS NULL)`, dk = `(SELECT * FROM dims WHERE k < 800 OR k IS NULL)`;
// [name, ClickHouse SQL, DuckDB SQL, flags, note]
const cases = [
  // subqueries, WITH, UNION ALL
  ['from_subquery', `SELECT s, c FROM (SELECT s, count() AS c FROM ${F} GROUP BY s) WHERE c > 1499 ORDER BY s`,
    `SELECT s, c FROM (SELECT s, count(*) AS c FROM ${f} GROUP BY s) WHERE c > 1499 ORDER BY s`],
  ['from_subquery_alias', `SELECT x.s, x.m FROM (SELECT s, max(v) AS m FROM ${F} WHERE id < 1000 GROUP BY s) AS x ORDER BY x.m DESC, x.s LIMIT 5`,
    `SELECT x.s, x.m FROM (SELECT s, max(v) AS m FROM ${f} WHERE id < 1000 GROUP BY s) AS x ORDER BY x.m DESC, x.s LIMIT 5`],
  ['nested_subquery', `SELECT count(), sum(m) FROM (SELECT k, m FROM (SELECT k, max(v) AS m FROM ${F} GROUP BY k) WHERE m > 900)`,
    `SELECT count(*), sum(m) FROM (SELECT k, m FROM (SELECT k, max(v) AS m FROM ${f} GROUP BY k) WHERE m > 900)`],
  ['cte_twice', `WITH a AS (SELECT k, sum(v) AS sv FROM ${F} GROUP BY k) SELECT count(), sum(sv) FROM a UNION ALL SELECT max(sv), min(sv) FROM a`,
    `WITH a AS (SELECT k, sum(v) AS sv FROM ${f} GROUP BY k) SELECT count(*), sum(sv) FROM a UNION ALL SELECT max(sv), min(sv) FROM a`, 'sorted'],
  ['cte_chain', `WITH a AS (SELECT k, v FROM ${F} WHERE v < 100), b AS (SELECT k, count() AS c FROM a GROUP BY k) SELECT count(), sum(c) FROM b`,
    `WITH a AS (SELECT k, v FROM ${f} WHERE v < 100), b AS (SELECT k, count(*) AS c FROM a GROUP BY k) SELECT count(*), sum(c) FROM b`],
  ['with_expression', `WITH 500 AS lim, v * 2 AS dv SELECT count(), sum(dv) FROM ${F} WHERE v > lim`,
    `SELECT count(*), sum(v * 2) FROM ${f} WHERE v > 500`, '-', "ClickHouse's WITH expr AS name: the name stands for the expression"],
  ['with_scalar_subquery', `WITH (SELECT avg(v) FROM ${F}) AS av SELECT count() FROM ${F} WHERE v > av`,
    `SELECT count(*) FROM ${f} WHERE v > (SELECT avg(v) FROM ${f})`],
  ['scalar_subquery', `SELECT s, (SELECT max(w) FROM ${DM}) AS mw, count() FROM ${F} WHERE v > (SELECT avg(v) FROM ${F}) GROUP BY s ORDER BY s LIMIT 5`,
    `SELECT s, (SELECT max(w) FROM ${d}) AS mw, count(*) FROM ${f} WHERE v > (SELECT avg(v) FROM ${f}) GROUP BY s ORDER BY s LIMIT 5`],
  ['scalar_subquery_empty', `SELECT count(), (SELECT k FROM ${DM} WHERE j < 0) FROM ${F}`,
    `SELECT count(*), NULL FROM ${f}`, '-', 'ClickHouse: a scalar subquery without rows is NULL'],
  ['in_subquery', `SELECT count(), sum(v) FROM ${F} WHERE k IN (SELECT k FROM ${DM})`,
    `SELECT count(*), sum(v) FROM ${f} WHERE k IN (SELECT k FROM ${d})`],
  ['not_in_subquery', `SELECT count(), sum(v) FROM ${F} WHERE k NOT IN (SELECT k FROM ${DM} WHERE k IS NOT NULL)`,
    `SELECT count(*), sum(v) FROM ${f} WHERE k NOT IN (SELECT k FROM ${d} WHERE k IS NOT NULL)`],
  ['in_subquery_strings', `SELECT s, count() FROM ${F} WHERE s IN (SELECT s FROM ${DM} WHERE j < 5) GROUP BY s ORDER BY s`,
    `SELECT s, count(*) FROM ${f} WHERE s IN (SELECT s FROM ${d} WHERE j < 5) GROUP BY s ORDER BY s`],
  ['in_subquery_sorted', `SELECT count(), sum(v) FROM ${F} WHERE v - 500 IN (SELECT k - 400 FROM ${DM}) OR (v - 500) * 1.5 IN (SELECT (j - 700) * 1.5 FROM ${DM} WHERE j % 3 = 0) OR s IN (SELECT s FROM ${DM} WHERE j < 7 OR j BETWEEN 20 AND 30)`,
    `SELECT count(*), sum(v) FROM ${f} WHERE v - 500 IN (SELECT k - 400 FROM ${d}) OR (v - 500) * 1.5 IN (SELECT (j - 700) * 1.5 FROM ${d} WHERE j % 3 = 0) OR s IN (SELECT s FROM ${d} WHERE j < 7 OR j BETWEEN 20 AND 30)`,
    '-', 'lists long enough to be sorted and hashed: negative integers, negative doubles, strings'],
  ['in_subquery_empty', `SELECT count() FROM ${F} WHERE k IN (SELECT k FROM ${E})`,
    `SELECT count(*) FROM ${f} WHERE k IN (SELECT k FROM ${e})`],
  ['in_subquery_zero_negative', `SELECT count(), sum(v) FROM ${F} WHERE k % 11 - 5 IN (SELECT k % 7 - 3 FROM ${DM} WHERE k < 100)`,
    `SELECT count(*), sum(v) FROM ${f} WHERE k % 11 - 5 IN (SELECT k % 7 - 3 FROM ${d} WHERE k < 100)`,
    '-', 'a long list of integers with 0 and negatives (a hash set)'],
  ['in_cte', `WITH big AS (SELECT k FROM ${DM} WHERE w > 1000) SELECT count() FROM ${F} WHERE k IN (SELECT k FROM big)`,
    `WITH big AS (SELECT k FROM ${d} WHERE w > 1000) SELECT count(*) FROM ${f} WHERE k IN (SELECT k FROM big)`],
  ['union_all', `SELECT id, v FROM ${F} WHERE id < 5 UNION ALL SELECT k, w FROM ${DM} WHERE j < 4 UNION ALL SELECT 7, 0.5 FROM ${DM} WHERE j = 1`,
    `SELECT id, v::DOUBLE FROM ${f} WHERE id < 5 UNION ALL SELECT k, w FROM ${d} WHERE j < 4 UNION ALL SELECT 7, 0.5`, 'sorted', 'Int64 and Float64 meet as Float64'],
  ['union_all_in_from', `SELECT count(), sum(x) FROM (SELECT v AS x FROM ${F} UNION ALL SELECT j FROM ${DM} UNION ALL SELECT k FROM ${E})`,
    `SELECT count(*), sum(x) FROM (SELECT v AS x FROM ${f} UNION ALL SELECT j FROM ${d} UNION ALL SELECT k FROM ${e})`],
  // joins
  ['join_inner', `SELECT count(), sum(f.v), sum(d.w), min(d.name), max(d.name) FROM ${F} AS f JOIN ${DM} AS d ON f.k = d.k`,
    `SELECT count(*), sum(f.v), sum(d.w), min(d.name), max(d.name) FROM ${f} AS f JOIN ${d} AS d ON f.k = d.k`],
  ['join_inner_rows', `SELECT f.id, f.k, d.name, d.s FROM ${F} AS f INNER JOIN ${DM} AS d ON f.k = d.k WHERE f.id < 400 ORDER BY f.id, d.name`,
    `SELECT f.id, f.k, d.name, d.s FROM ${f} AS f INNER JOIN ${d} AS d ON f.k = d.k WHERE f.id < 400 ORDER BY f.id, d.name`,
    '-', 'the right s, whose name the left has, is d.s'],
  ['join_two_keys', `SELECT count(), sum(d.w) FROM ${F} AS f JOIN ${DM} AS d ON f.k = d.k AND d.s = f.s`,
    `SELECT count(*), sum(d.w) FROM ${f} AS f JOIN ${d} AS d ON f.k = d.k AND d.s = f.s`],
  ['join_left_nullable', `SELECT f.id, d.name, d.w FROM ${F} AS f LEFT JOIN ${DM} AS d ON f.k = d.k WHERE f.id < 300 ORDER BY f.id, d.name`,
    `SELECT f.id, d.name, d.w FROM ${f} AS f LEFT JOIN ${d} AS d ON f.k = d.k WHERE f.id < 300 ORDER BY f.id, d.name NULLS LAST`,
    '-', "the Parquet columns are Nullable, so join_use_nulls = 0's default of a missing row is NULL"],
  ['join_left_defaults', `SELECT f.id, d.name, d.w FROM ${F} AS f LEFT OUTER JOIN (SELECT coalesce(k, -1) AS k, coalesce(name, '') AS name, coalesce(w, 0) AS w FROM ${DM}) AS d ON f.k = d.k WHERE f.id < 300 ORDER BY f.id, d.name`,
    `SELECT f.id, coalesce(d.name, ''), coalesce(d.w, 0) FROM ${f} AS f LEFT JOIN (SELECT coalesce(k, -1) AS k, name, w FROM ${d}) AS d ON f.k = d.k WHERE f.id < 300 ORDER BY f.id, 2`,
    '-', "join_use_nulls = 0 (ClickHouse's default): a missing right row gives the type's defaults, '' and 0"],
  ['join_left_agg', `SELECT count(), count(d.name), sum(f.v) FROM ${F} AS f LEFT JOIN ${DM} AS d ON f.k = d.k`,
    `SELECT count(*), count(d.name), sum(f.v) FROM ${f} AS f LEFT JOIN ${d} AS d ON f.k = d.k`],
  ['join_right', `SELECT d.name, d.k, f.id FROM ${F} AS f RIGHT JOIN ${DM} AS d ON f.k = d.k WHERE d.k >= 5000 OR d.k IS NULL OR d.j < 3 ORDER BY d.name, f.id`,
    `SELECT d.name, d.k, f.id FROM ${f} AS f RIGHT JOIN ${d} AS d ON f.k = d.k WHERE d.k >= 5000 OR d.k IS NULL OR d.j < 3 ORDER BY d.name, f.id NULLS LAST`],
  ['join_full', `SELECT count(), count(f.id), count(d.name), sum(f.v), sum(d.w) FROM ${F} AS f FULL OUTER JOIN ${DM} AS d ON f.k = d.k`,
    `SELECT count(*), count(f.id), count(d.name), sum(f.v), sum(d.w) FROM ${f} AS f FULL JOIN ${d} AS d ON f.k = d.k`],
  ['join_full_use_nulls', `SELECT count(), count(f.id), count(d.j) FROM ${F} AS f FULL JOIN (SELECT coalesce(k, -1) AS k, coalesce(j, 0) AS j FROM ${DM}) AS d ON f.k = d.k SETTINGS join_use_nulls = 1`,
    `SELECT count(*), count(f.id), count(d.j) FROM ${f} AS f FULL JOIN (SELECT coalesce(k, -1) AS k, j FROM ${d}) AS d ON f.k = d.k`,
    '-', 'join_use_nulls = 1: the missing side is NULL, as in standard SQL'],
  ['join_using', `SELECT k, count(), sum(w) FROM ${F} JOIN ${DM} USING (k) GROUP BY k ORDER BY k LIMIT 40`,
    `SELECT k, count(*), sum(w) FROM ${f} JOIN ${d} USING (k) GROUP BY k ORDER BY k LIMIT 40`],
  ['join_full_using', `SELECT k, count() FROM ${F} FULL JOIN ${DM} USING k WHERE k >= 5000 OR k IS NULL GROUP BY k ORDER BY k`,
    `SELECT k, count(*) FROM ${f} FULL JOIN ${d} USING (k) WHERE k >= 5000 OR k IS NULL GROUP BY k ORDER BY k NULLS LAST`,
    '-', "USING keeps one key column: the left's, the right's for a right row nothing matched"],
  ['join_any_left', `SELECT count(), sum(f.v), count(d.name) FROM ${F} AS f ANY LEFT JOIN ${DM} AS d ON f.k = d.k`,
    `SELECT count(*), sum(v), count(*) FILTER (WHERE k IN (SELECT k FROM ${d})) FROM ${f}`, '-', 'ANY: one right row per left row'],
  ['join_any_left_first', `SELECT f.id, d.name FROM ${F} AS f ANY LEFT JOIN ${DM} AS d ON f.k = d.k WHERE f.id < 200 ORDER BY f.id`,
    `SELECT f.id, (SELECT name FROM ${d} d WHERE d.k = f.k ORDER BY j LIMIT 1) FROM ${f} AS f WHERE f.id < 200 ORDER BY f.id`,
    '-', 'ANY takes the first matching right row (dims.parquet is one unit, read in order)'],
  ['join_any_inner', `SELECT count(), sum(f.v) FROM ${F} AS f ANY INNER JOIN ${DM} AS d ON f.k = d.k`,
    `SELECT count(*), sum(v) FROM ${f} WHERE k IN (SELECT k FROM ${d})`],
  ['join_empty_right', `SELECT count(), sum(f.v), count(e.name) FROM ${F} AS f LEFT JOIN ${E} AS e ON f.k = e.k`,
    `SELECT count(*), sum(f.v), count(e.name) FROM ${f} AS f LEFT JOIN ${e} AS e ON f.k = e.k`],
  ['join_empty_inner', `SELECT count() FROM ${F} AS f JOIN ${E} AS e ON f.k = e.k`,
    `SELECT count(*) FROM ${f} AS f JOIN ${e} AS e ON f.k = e.k`],
  ['join_empty_left', `SELECT count(), count(d.name), count(e.j) FROM ${E} AS e RIGHT JOIN ${DM} AS d ON e.k = d.k`,
    `SELECT count(*), count(d.name), count(e.j) FROM ${e} AS e RIGHT JOIN ${d} AS d ON e.k = d.k`],
  ['join_cross', `SELECT count(), sum(a.w + b.w) FROM ${DM} AS a CROSS JOIN (SELECT w FROM ${DM} WHERE k < 10) AS b`,
    `SELECT count(*), sum(a.w + b.w) FROM ${d} AS a CROSS JOIN (SELECT w FROM ${d} WHERE k < 10) AS b`],
  ['join_comma', `SELECT count() FROM ${E} AS a, ${DM} AS b`, `SELECT count(*) FROM ${e} AS a, ${d} AS b`],
  ['join_cte', `WITH dd AS (SELECT k, max(w) AS mw FROM ${DM} GROUP BY k) SELECT f.s, count(), sum(dd.mw) FROM ${F} AS f JOIN dd ON f.k = dd.k GROUP BY f.s ORDER BY f.s`,
    `WITH dd AS (SELECT k, max(w) AS mw FROM ${d} GROUP BY k) SELECT f.s, count(*), sum(dd.mw) FROM ${f} AS f JOIN dd ON f.k = dd.k GROUP BY f.s ORDER BY f.s`],
  ['join_three', `SELECT count(), sum(x.c) FROM ${F} AS f JOIN ${DM} AS d ON f.k = d.k LEFT JOIN (SELECT s, count() AS c FROM ${DM} GROUP BY s) AS x ON d.s = x.s`,
    `SELECT count(*), sum(x.c) FROM ${f} AS f JOIN ${d} AS d ON f.k = d.k LEFT JOIN (SELECT s, count(*) AS c FROM ${d} GROUP BY s) AS x ON d.s = x.s`],
  ['join_where_group', `SELECT d.s, count(), sum(f.v) FROM ${F} AS f JOIN ${DM} AS d ON f.k = d.k WHERE f.v > 500 AND d.w < 900 GROUP BY d.s ORDER BY d.s`,
    `SELECT d.s, count(*), sum(f.v) FROM ${f} AS f JOIN ${d} AS d ON f.k = d.k WHERE f.v > 500 AND d.w < 900 GROUP BY d.s ORDER BY d.s`],
  ['join_pruned_left', `SELECT count(), sum(d.w), count(d.name) FROM ${F} AS f LEFT JOIN ${DM} AS d ON f.k = d.k WHERE f.id < 10000`,
    `SELECT count(*), sum(d.w), count(d.name) FROM ${f} AS f LEFT JOIN ${d} AS d ON f.k = d.k WHERE f.id < 10000`,
    '-', "WHERE on the left's columns prunes its row groups (5 of 6)"],
  ['join_pruned_right', `SELECT count(), sum(d.w), count(f.id) FROM ${F} AS f RIGHT JOIN ${DM} AS d ON f.k = d.k WHERE f.id < 10000 OR f.id IS NULL`,
    `SELECT count(*), sum(d.w), count(f.id) FROM ${f} AS f RIGHT JOIN ${d} AS d ON f.k = d.k WHERE f.id < 10000 OR f.id IS NULL`,
    '-', 'RIGHT JOIN: the left is not pruned (its rows decide which right rows match)'],
  ['join_self', `SELECT count() FROM ${DM} AS a JOIN ${DM} AS b ON a.k = b.k`,
    `SELECT count(*) FROM ${d} AS a JOIN ${d} AS b ON a.k = b.k`, '-', 'duplicate keys on both sides: every pair'],
  // the right's one integer key dense (0..799, some keys twice, NULLs): its rows indexed by the key, not hashed
  ['join_dense_inner', `SELECT count(), sum(f.v), sum(d.w), min(d.name), max(d.name) FROM ${F} AS f JOIN ${DK} AS d ON f.k = d.k`,
    `SELECT count(*), sum(f.v), sum(d.w), min(d.name), max(d.name) FROM ${f} AS f JOIN ${dk} AS d ON f.k = d.k`,
    '-', 'a dense key on the right: the table is an array indexed by the key'],
  ['join_dense_rows', `SELECT f.id, f.k, d.k, d.name FROM ${F} AS f JOIN ${DK} AS d ON f.k = d.k WHERE f.id < 400 ORDER BY f.id, d.name`,
    `SELECT f.id, f.k, d.k, d.name FROM ${f} AS f JOIN ${dk} AS d ON f.k = d.k WHERE f.id < 400 ORDER BY f.id, d.name`,
    '-', "the right's key column read back after the build"],
  ['join_dense_left', `SELECT f.id, d.name, d.w FROM ${F} AS f LEFT JOIN ${DK} AS d ON f.k = d.k WHERE f.id < 300 ORDER BY f.id, d.name`,
    `SELECT f.id, d.name, d.w FROM ${f} AS f LEFT JOIN ${dk} AS d ON f.k = d.k WHERE f.id < 300 ORDER BY f.id, d.name NULLS LAST`],
  ['join_dense_right', `SELECT count(), count(f.id), count(d.name), sum(d.w) FROM ${F} AS f RIGHT JOIN ${DK} AS d ON f.k = d.k`,
    `SELECT count(*), count(f.id), count(d.name), sum(d.w) FROM ${f} AS f RIGHT JOIN ${dk} AS d ON f.k = d.k`],
  ['join_dense_full', `SELECT count(), count(f.id), count(d.name), sum(f.v), sum(d.w) FROM ${F} AS f FULL OUTER JOIN ${DK} AS d ON f.k = d.k`,
    `SELECT count(*), count(f.id), count(d.name), sum(f.v), sum(d.w) FROM ${f} AS f FULL JOIN ${dk} AS d ON f.k = d.k`],
  ['join_dense_full_using', `SELECT k, count() FROM ${F} FULL JOIN ${DK} USING k WHERE k < 5 OR k IS NULL GROUP BY k ORDER BY k`,
    `SELECT k, count(*) FROM ${f} FULL JOIN ${dk} USING (k) WHERE k < 5 OR k IS NULL GROUP BY k ORDER BY k NULLS LAST`],
  ['join_dense_any_left_first', `SELECT f.id, d.name FROM ${F} AS f ANY LEFT JOIN ${DK} AS d ON f.k = d.k WHERE f.id < 200 ORDER BY f.id`,
    `SELECT f.id, (SELECT name FROM ${dk} d WHERE d.k = f.k ORDER BY j LIMIT 1) FROM ${f} AS f WHERE f.id < 200 ORDER BY f.id`],
  ['join_dense_negative', `SELECT count(), sum(f.v), sum(d.w) FROM ${F} AS f JOIN (SELECT k - 400 AS k, w FROM ${DM} WHERE k < 800) AS d ON f.k = d.k`,
    `SELECT count(*), sum(f.v), sum(d.w) FROM ${f} AS f JOIN (SELECT k - 400 AS k, w FROM ${d} WHERE k < 800) AS d ON f.k = d.k`,
    '-', 'dense keys from -400: left keys below and above their span match nothing'],
  // window functions
  ['win_row_number', `SELECT k, t, row_number() OVER (PARTITION BY k ORDER BY t) AS rn FROM ${F} WHERE id < 3000 ORDER BY k, t`,
    `SELECT k, t, row_number() OVER (PARTITION BY k ORDER BY t) AS rn FROM ${f} WHERE id < 3000 ORDER BY k NULLS LAST, t`,
    '-', 'the NULL keys are a partition of their own'],
  ['win_int_desc', `SELECT id, rank() OVER (PARTITION BY k ORDER BY v - 500 DESC) AS r, dense_rank() OVER (PARTITION BY v % 7 ORDER BY k DESC NULLS FIRST) AS dr, rank() OVER (PARTITION BY -t % 5 ORDER BY k NULLS FIRST) AS r2 FROM ${F} WHERE id < 3000 ORDER BY id`,
    `SELECT id, rank() OVER (PARTITION BY k ORDER BY v - 500 DESC) AS r, dense_rank() OVER (PARTITION BY v % 7 ORDER BY k DESC NULLS FIRST) AS dr, rank() OVER (PARTITION BY -t % 5 ORDER BY k NULLS FIRST) AS r2 FROM ${f} WHERE id < 3000 ORDER BY id`,
    '-', 'integer partition and order keys (the radix-sorted path): negative keys, DESC, NULLs first and last'],
  // every row (more than 32768: the sort's buckets shared by the threads), a NULL partition key
  ['win_all_rows', `SELECT count(), sum(r), sum(r * (id % 13)), sum(dr * (id % 7)), max(dr) FROM (SELECT id, rank() OVER (PARTITION BY k ORDER BY v DESC) AS r, dense_rank() OVER (PARTITION BY v % 50 ORDER BY k NULLS FIRST) AS dr FROM ${F})`,
    `SELECT count(*), sum(r), sum(r * (id % 13)), sum(dr * (id % 7)), max(dr) FROM (SELECT id, rank() OVER (PARTITION BY k ORDER BY v DESC) AS r, dense_rank() OVER (PARTITION BY v % 50 ORDER BY k NULLS FIRST) AS dr FROM ${f})`],
  ['win_all_rows_number', `SELECT count(), sum(rn * (id % 11)), max(rn) FROM (SELECT id, row_number() OVER (PARTITION BY k % 300 ORDER BY t) AS rn FROM ${F})`,
    `SELECT count(*), sum(rn * (id % 11)), max(rn) FROM (SELECT id, row_number() OVER (PARTITION BY k % 300 ORDER BY t) AS rn FROM ${f})`],
  ['win_rank', `SELECT s, v, rank() OVER (PARTITION BY s ORDER BY v DESC) AS r, dense_rank() OVER (PARTITION BY s ORDER BY v DESC) AS dr FROM ${F} WHERE id < 2000 ORDER BY s, v DESC`,
    `SELECT s, v, rank() OVER (PARTITION BY s ORDER BY v DESC) AS r, dense_rank() OVER (PARTITION BY s ORDER BY v DESC) AS dr FROM ${f} WHERE id < 2000 ORDER BY s, v DESC`],
  ['win_frames', `SELECT id, sum(v) OVER (ORDER BY t ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING), avg(v) OVER (PARTITION BY s ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW), count() OVER (PARTITION BY s), min(v) OVER (PARTITION BY s ORDER BY t ROWS BETWEEN 3 PRECEDING AND 3 FOLLOWING), max(v) OVER (PARTITION BY k ORDER BY t ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING), sum(v) OVER (ORDER BY t ROWS 3 PRECEDING) FROM ${F} WHERE id < 1500 ORDER BY id`,
    `SELECT id, sum(v) OVER (ORDER BY t ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING), avg(v) OVER (PARTITION BY s ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW), count(*) OVER (PARTITION BY s), min(v) OVER (PARTITION BY s ORDER BY t ROWS BETWEEN 3 PRECEDING AND 3 FOLLOWING), max(v) OVER (PARTITION BY k ORDER BY t ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING), sum(v) OVER (ORDER BY t ROWS 3 PRECEDING) FROM ${f} WHERE id < 1500 ORDER BY id`],
  ['win_default_frame', `SELECT id, sum(v) OVER (PARTITION BY s ORDER BY v), count() OVER (ORDER BY s) FROM ${F} WHERE id < 1000 ORDER BY id`,
    `SELECT id, sum(v) OVER (PARTITION BY s ORDER BY v), count(*) OVER (ORDER BY s) FROM ${f} WHERE id < 1000 ORDER BY id`,
    '-', "without a frame, ORDER BY's frame ends at the current row's last peer (ClickHouse's default RANGE frame)"],
  ['win_nullable', `SELECT id, count(k) OVER (PARTITION BY s), sum(k) OVER (PARTITION BY s ORDER BY t ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), min(k) OVER (PARTITION BY s ORDER BY t ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM ${F} WHERE id % 17 < 2 AND id < 3000 ORDER BY id`,
    `SELECT id, count(k) OVER (PARTITION BY s), sum(k) OVER (PARTITION BY s ORDER BY t ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), min(k) OVER (PARTITION BY s ORDER BY t ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM ${f} WHERE id % 17 < 2 AND id < 3000 ORDER BY id`,
    '-', 'a frame of NULLs sums to NULL'],
  ['win_lag_lead', `SELECT id, lag(v) OVER (PARTITION BY s ORDER BY t), lead(v, 2) OVER (PARTITION BY s ORDER BY t), lagInFrame(k) OVER (ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING), leadInFrame(v, 1, -1) OVER (PARTITION BY s ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING), leadInFrame(v) OVER (PARTITION BY s ORDER BY t) FROM ${F} WHERE id < 1000 ORDER BY id`,
    `SELECT id, lag(v) OVER (PARTITION BY s ORDER BY t), lead(v, 2) OVER (PARTITION BY s ORDER BY t), lag(k) OVER (ORDER BY t), lead(v, 1, -1) OVER (PARTITION BY s ORDER BY t), NULL FROM ${f} WHERE id < 1000 ORDER BY id`,
    '-', "leadInFrame keeps to the frame: the default frame ends at the current row, so it gives the default (NULL: v is Nullable)"],
  ['win_top_n', `SELECT s, id, v FROM (SELECT s, id, v, row_number() OVER (PARTITION BY s ORDER BY v DESC, id) AS rn FROM ${F}) WHERE rn <= 2 ORDER BY s, v DESC, id`,
    `SELECT s, id, v FROM (SELECT s, id, v, row_number() OVER (PARTITION BY s ORDER BY v DESC, id) AS rn FROM ${f}) WHERE rn <= 2 ORDER BY s, v DESC, id`],
  ['win_unordered', `SELECT * FROM (SELECT id, lag(s) OVER (PARTITION BY k ORDER BY id) AS ls, row_number() OVER (PARTITION BY s ORDER BY t, id) AS rn, sum(v) OVER (PARTITION BY s ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS sv, s FROM ${F} WHERE id < 3000) ORDER BY id`,
    `SELECT * FROM (SELECT id, lag(s) OVER (PARTITION BY k ORDER BY id) AS ls, row_number() OVER (PARTITION BY s ORDER BY t, id) AS rn, sum(v) OVER (PARTITION BY s ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS sv, s FROM ${f} WHERE id < 3000) ORDER BY id`,
    '-', "windows of an inner query without ORDER BY; s is Nullable(String) in the file, so lag's default is NULL"],
  ['win_over_group', `SELECT k, sum(v) AS sv, rank() OVER (ORDER BY sum(v) DESC) AS r FROM ${F} GROUP BY k ORDER BY r, k LIMIT 20`,
    `SELECT k, sum(v) AS sv, rank() OVER (ORDER BY sum(v) DESC) AS r FROM ${f} GROUP BY k ORDER BY r, k NULLS LAST LIMIT 20`],
  ['win_on_join', `SELECT d.s, f.id, row_number() OVER (PARTITION BY d.s ORDER BY f.t) AS rn FROM ${F} AS f JOIN ${DM} AS d ON f.k = d.k WHERE f.id < 2000 ORDER BY d.s, rn`,
    `SELECT d.s, f.id, row_number() OVER (PARTITION BY d.s ORDER BY f.t) AS rn FROM ${f} AS f JOIN ${d} AS d ON f.k = d.k WHERE f.id < 2000 ORDER BY d.s, rn`,
    'sorted', 'a fact row joined to two dims rows of one s ties in f.t: compared as a multiset'],
];

const esc = (s) => s.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n');
const fmt = (v) => {
  if (v === null || v === undefined) return '\\N';
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return Number.isNaN(v) ? 'nan' : String(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'string') return esc(v);
  return esc(v.toString());
};
let list = '';
for (const [name, ch, dk, flags = '-'] of cases) {
  const r = await con.runAndReadAll(dk);
  const rows = r.getRows().map((row) => row.map(fmt).join('\t'));
  writeFileSync(join(D, `${name}.expected`), rows.map((l) => l + '\n').join(''));
  list += `${name}\t${flags}\t${ch.replaceAll('{D}', D)}\n`;
}
writeFileSync(join(D, 'cases.tsv'), list);
console.error(`gen_compose.mjs: ${cases.length} cases, datasets in ${D}`);
