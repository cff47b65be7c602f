// SPDX-License-Identifier: Apache-2.0
//
// cases_array.mjs: gen.mjs's cases for Array values and for Parquet files
// with nested columns as DuckDB writes them: LIST columns read as Array(T)
// (with NULL lists and NULL elements), while MAP and STRUCT columns are left
// out of the query and the file's other columns read.
//
// DuckDB's lists are the oracle: list literals, [i] (1-based, negative from
// the end), list_contains, len, string_split, unnest, list(x). Where
// ClickHouse differs the DuckDB side gives ClickHouse's answer: an index out
// of range is the element type's default in ClickHouse (NULL for the Nullable
// elements of DuckDB-written columns, as in DuckDB); groupArray's and
// groupUniqArray's order is unspecified (their values are compared as
// multisets, through ARRAY JOIN); topK counts exactly, here on data with
// clear frequencies, where ClickHouse's approximate Filtered Space-Saving
// gives the same answer.

// nested.parquet: Id, L INTEGER[] (NULL lists and NULL elements), S VARCHAR[],
// M MAP(VARCHAR, INTEGER), T STRUCT(a INTEGER, b VARCHAR), After VARCHAR;
// two row groups.
export async function arrayData(con, D) {
  await con.run(`COPY (SELECT i::BIGINT AS Id,
      CASE WHEN i % 10 = 9 THEN NULL WHEN i % 10 = 8 THEN []::INTEGER[]
           ELSE [i::INTEGER, CASE WHEN i % 4 = 1 THEN NULL ELSE (i * 2)::INTEGER END, (i % 7)::INTEGER][1:1 + i % 3] END AS L,
      ['s' || (i % 5)::VARCHAR, 'x'][1:1 + i % 2] AS S,
      MAP {'k' || (i % 3)::VARCHAR: i::INTEGER} AS M,
      {'a': i::INTEGER, 'b': 'b' || i::VARCHAR} AS T,
      'after' || (i % 17)::VARCHAR AS After
    FROM range(3000) t(i)) TO '${D}/nested.parquet' (FORMAT parquet, ROW_GROUP_SIZE 2000)`);
}

// nested_hy.parquet: LIST columns as another writer (hyparquet-writer) puts
// them, in the shapes pyarrow and arrow-rs write: the standard three levels
// with an OPTIONAL 'element' (L3: NULL lists, empty lists, NULL elements), the
// older 'item' name with REQUIRED elements (Litem, read as Array(Int64)), a
// REQUIRED list of REQUIRED strings (Lreq); data pages v2 of 4 KiB, so that
// lists run across pages, and two row groups.
export function arrayOtherWriterData(hyw, D) {
  const N = 3000;
  const ids = Array.from({ length: N }, (_, i) => BigInt(i));
  const upTo = (n, f) => Array.from({ length: n }, (_, k) => f(k));
  hyw.parquetWriteFile({
    filename: `${D}/nested_hy.parquet`, codec: 'SNAPPY', rowGroupSize: 2000, pageSize: 4096,
    schema: [
      { name: 'root', num_children: 4 },
      { name: 'Id', type: 'INT64', repetition_type: 'REQUIRED' },
      { name: 'L3', repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
      { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
      { name: 'element', type: 'INT32', repetition_type: 'OPTIONAL' },
      { name: 'Litem', repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
      { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
      { name: 'item', type: 'INT64', repetition_type: 'REQUIRED' },
      { name: 'Lreq', repetition_type: 'REQUIRED', converted_type: 'LIST', num_children: 1 },
      { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
      { name: 'element', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'REQUIRED' },
    ],
    columnData: [
      { name: 'Id', data: ids },
      { name: 'L3', data: ids.map((_, i) => (i % 10 === 9 ? null : i % 10 === 8 ? []
        : upTo(1 + i % 3, (k) => (k === 1 && i % 4 === 1 ? null : i * 10 + k)))) },
      { name: 'Litem', data: ids.map((_, i) => (i % 7 === 3 ? null : upTo(i % 4, (k) => BigInt(i - k * 1000)))) },
      { name: 'Lreq', data: ids.map((_, i) => upTo(i % 3, (k) => `s${(i + k) % 11}`)) },
    ],
  });
}

export function arrayCases(P, Q, D) {
  const G = `file('{D}/small/part_*.parquet')`, GQ = `'${D}/small/part_*.parquet'`;
  const N = `file('{D}/nested.parquet')`, NQ = `'${D}/nested.parquet'`;
  const H = `file('{D}/nested_hy.parquet')`, HQ = `'${D}/nested_hy.parquet'`;
  return [
    // the flat columns of a file with nested ones
    ['nested_flat_cols', `SELECT Id, After FROM ${N} WHERE Id % 250 = 7 ORDER BY Id`,
      `SELECT Id, After FROM ${NQ} WHERE Id % 250 = 7 ORDER BY Id`],
    ['nested_flat_agg', `SELECT After, count(), sum(Id) FROM ${N} GROUP BY After ORDER BY After`,
      `SELECT After, count(*), sum(Id) FROM ${NQ} GROUP BY After ORDER BY After`],
    ['nested_star_except', `SELECT * EXCEPT (M, T) FROM ${N} WHERE Id < 50 ORDER BY Id`,
      `SELECT Id, coalesce(L, []), S, After FROM ${NQ} WHERE Id < 50 ORDER BY Id`,
      '-', 'a NULL LIST reads as [] (an Array is never NULL in ClickHouse); NULL elements are NULLs of Array(Nullable(T))'],
    // LIST columns as Array(T)
    ['list_functions', `SELECT Id, length(L), L[1], L[-1], has(L, 4), has(S, 'x'), notEmpty(L) FROM ${N} WHERE Id % 97 < 12 ORDER BY Id`,
      `SELECT Id, coalesce(len(L), 0), L[1], L[-1], coalesce(list_contains(L, 4), false)::INT, list_contains(S, 'x')::INT, (coalesce(len(L), 0) > 0)::INT FROM ${NQ} WHERE Id % 97 < 12 ORDER BY Id`],
    ['list_array_join', `SELECT x, count() FROM ${N} ARRAY JOIN L AS x GROUP BY x ORDER BY x NULLS LAST LIMIT 20`,
      `SELECT x, count(*) FROM (SELECT unnest(L) AS x FROM ${NQ}) GROUP BY x ORDER BY x NULLS LAST LIMIT 20`],
    ['list_group', `SELECT S, count(), sum(length(L)) FROM ${N} GROUP BY S ORDER BY S`,
      `SELECT S, count(*), sum(coalesce(len(L), 0)) FROM ${NQ} GROUP BY S ORDER BY S`, '-', 'a LIST column as a GROUP BY key'],
    ['list_where', `SELECT count(), sum(Id) FROM ${N} WHERE has(L, NULL) OR length(S) = 2`,
      `SELECT count(*), sum(Id) FROM ${NQ} WHERE list_contains(list_transform(L, x -> x IS NULL), true) OR len(S) = 2`],
    ['nested_count', `SELECT count() FROM ${N}`, `SELECT count(*) FROM ${NQ}`],
    // CAST to Array(T): from an Array (its elements converted) or from its text
    ['cast_array_text', `SELECT Id, CAST(concat('[', toString(Id), ', ', toString(Id * 2), ']') AS Array(Int64)) AS a, length(a), CAST('[]' AS Array(String)) FROM ${P} WHERE Id < 12 ORDER BY Id`,
      `SELECT Id, [Id, Id * 2], 2, []::VARCHAR[] FROM ${Q} WHERE Id < 12 ORDER BY Id`],
    ['cast_array_elements', `SELECT Id, CAST(L AS Array(Nullable(Int64))), CAST(S AS Array(Nullable(String))), CAST([Id, 7] AS Array(String)) FROM ${N} WHERE Id % 97 < 10 ORDER BY Id`,
      `SELECT Id, coalesce(L, [])::BIGINT[], S, [Id::VARCHAR, '7'] FROM ${NQ} WHERE Id % 97 < 10 ORDER BY Id`],
    ['cast_array_types', `SELECT Id, CAST(['1.25', '-3'] AS Array(Decimal(9, 2))), CAST('["2020-01-02", "2021-03-04"]' AS Array(Date)), CAST('[1, NULL, 3]' AS Array(Nullable(Float64))), CAST([1, 0, 2] AS Array(Bool)) FROM ${P} WHERE Id < 3 ORDER BY Id`,
      `SELECT Id, ['1.25', '-3']::DECIMAL(9, 2)[], ['2020-01-02', '2021-03-04']::DATE[], [1, NULL, 3]::DOUBLE[], [true, false, true] FROM ${Q} WHERE Id < 3 ORDER BY Id`],
    ['cast_int_wrap', `SELECT Id, CAST('[300, -1, 5]' AS Array(UInt8)), CAST([300, 128] AS Array(Int8)), CAST('300' AS UInt8), CAST(300 AS Int8) FROM ${P} WHERE Id < 3 ORDER BY Id`,
      `SELECT Id, [44, 255, 5]::UTINYINT[], [44, -128]::TINYINT[], 44::UTINYINT, 44::TINYINT FROM ${Q} WHERE Id < 3 ORDER BY Id`,
      '-', "ClickHouse wraps integer CASTs, from numbers and from text alike: CAST('300', 'Int8') is 44 (DuckDB refuses, so its side says the values)"],
    // LIST columns of another writer
    ['list_other_writer', `SELECT Id, L3, Litem, Lreq, length(L3), has(Litem, Id) FROM ${H} WHERE Id % 97 < 14 ORDER BY Id`,
      `SELECT Id, coalesce(L3, []), coalesce(Litem, []), Lreq, coalesce(len(L3), 0), coalesce(list_contains(Litem, Id), false)::INT FROM ${HQ} WHERE Id % 97 < 14 ORDER BY Id`,
      '-', "hyparquet-writer's LISTs: 'element' and 'item', REQUIRED elements (Array(T), not Nullable), lists across pages"],
    ['list_other_writer_join', `SELECT count(), sum(x), min(x), max(x) FROM ${H} ARRAY JOIN Litem AS x`,
      `SELECT count(*), sum(x), min(x), max(x) FROM (SELECT unnest(Litem) AS x FROM ${HQ})`],
    ['list_other_writer_group', `SELECT s, count() FROM ${H} ARRAY JOIN Lreq AS s GROUP BY s ORDER BY s`,
      `SELECT s, count(*) FROM (SELECT unnest(Lreq) AS s FROM ${HQ}) GROUP BY s ORDER BY s`],
    ['list_other_writer_sums', `SELECT count(), sum(length(L3)), sum(length(Litem)), sum(length(Lreq)), countIf(has(L3, NULL)) FROM ${H}`,
      `SELECT count(*), sum(coalesce(len(L3), 0)), sum(coalesce(len(Litem), 0)), sum(len(Lreq)), count(*) FILTER (WHERE list_contains(list_transform(L3, x -> x IS NULL), true)) FROM ${HQ}`],
    // literals and indexing over columns (Nullable elements: the files' columns are)
    ['array_literals', `SELECT Id, [Id, Score] AS a, [OwnerDisplayName, 'x'] AS s, [ViewCount] AS n, [[Id], [], [Score, 1]] AS nn FROM ${P} WHERE Id < 20 ORDER BY Id`,
      `SELECT Id, [Id, Score], [OwnerDisplayName, 'x'], [ViewCount], [[Id], [], [Score, 1]] FROM ${Q} WHERE Id < 20 ORDER BY Id`],
    ['array_index', `SELECT Id, [Id, Score, ViewCount][PostTypeId], [Id, Score][-1], [Score][3], [OwnerDisplayName, 'z'][-2], ['a', 'b'][5], [1, 2][-3] FROM ${P} WHERE Id < 60 ORDER BY Id`,
      `SELECT Id, [Id, Score, ViewCount][PostTypeId], [Id, Score][-1], [Score][3], [OwnerDisplayName, 'z'][-2], '', 0 FROM ${Q} WHERE Id < 60 ORDER BY Id`,
      '-', "out of range: NULL for a Nullable element (both), '' for a String one (ClickHouse's default)"],
    ['array_has_len', `SELECT PostTypeId, count(), countIf(has([Score, PostTypeId * 10], 20)), sum(length([Id, ViewCount])), countIf(has(splitByChar('_', assumeNotNull(OwnerDisplayName)), '1')) FROM ${P} WHERE Id < 40000 GROUP BY PostTypeId ORDER BY PostTypeId`,
      `SELECT PostTypeId, count(*), count(*) FILTER (WHERE list_contains([Score, PostTypeId * 10], 20)), sum(len([Id, ViewCount])), count(*) FILTER (WHERE list_contains(string_split(OwnerDisplayName, '_'), '1')) FROM ${Q} WHERE Id < 40000 GROUP BY PostTypeId ORDER BY PostTypeId`],
    ['array_split', `SELECT Id, splitByChar('>', assumeNotNull(Tags)) AS t, length(t), splitByChar('_', assumeNotNull(OwnerDisplayName))[2], empty(splitByString('User_', assumeNotNull(OwnerDisplayName))) FROM ${P} WHERE Id % 1000 = 7 ORDER BY Id`,
      `SELECT Id, string_split(Tags, '>') AS t, len(t), coalesce(string_split(OwnerDisplayName, '_')[2], ''), 0 FROM ${Q} WHERE Id % 1000 = 7 ORDER BY Id`,
      '-', 'splitByString never gives an empty array for a non-empty separator'],
    ['array_in', `SELECT count() FROM ${P} WHERE PostTypeId IN [1, 3] AND OwnerDisplayName IN ['anon', 'User_7'] AND has(['anon', 'User_7', 'x'], OwnerDisplayName)`,
      `SELECT count(*) FROM ${Q} WHERE PostTypeId IN (1, 3) AND OwnerDisplayName IN ('anon', 'User_7')`],
    // ARRAY JOIN and arrayJoin
    ['array_join_group', `SELECT t, count() AS c FROM ${P} ARRAY JOIN splitByChar('>', assumeNotNull(Tags)) AS t GROUP BY t ORDER BY t`,
      `SELECT t, count(*) AS c FROM (SELECT unnest(string_split(Tags, '>')) AS t FROM ${Q}) GROUP BY t ORDER BY t`],
    ['array_join_fn', `SELECT Id, arrayJoin([Score, PostTypeId]) AS x FROM ${P} WHERE Id < 30 ORDER BY Id, x`,
      `SELECT Id, unnest([Score, PostTypeId]) AS x FROM ${Q} WHERE Id < 30 ORDER BY Id, x`],
    ['array_join_where', `SELECT PostTypeId, x, count() FROM ${P} ARRAY JOIN [Score % 3, PostTypeId] AS x WHERE x > 0 AND Id < 5000 GROUP BY PostTypeId, x ORDER BY PostTypeId, x`,
      `SELECT PostTypeId, x, count(*) FROM (SELECT PostTypeId, Id, unnest([Score % 3, PostTypeId]) AS x FROM ${Q}) WHERE x > 0 AND Id < 5000 GROUP BY PostTypeId, x ORDER BY PostTypeId, x`],
    ['array_left_join', `SELECT Id, x FROM ${P} LEFT ARRAY JOIN if(Id % 3 = 0, [], [Score, -Score]) AS x WHERE Id < 12 ORDER BY Id, x`,
      `SELECT Id, unnest(CASE WHEN Id % 3 = 0 THEN [NULL] ELSE [Score, -Score] END) AS x FROM ${Q} WHERE Id < 12 ORDER BY Id, x NULLS LAST`,
      '-', "LEFT ARRAY JOIN keeps a row of an empty array with the element's default: NULL for Nullable elements"],
    ['array_join_empty', `SELECT count(), sum(x) FROM ${P} ARRAY JOIN if(Id % 2 = 0, [], [Score]) AS x`,
      `SELECT count(*), sum(Score) FROM ${Q} WHERE Id % 2 = 1`],
    ['array_join_glob', `SELECT x, count() FROM ${G} ARRAY JOIN [PostTypeId, PostTypeId + 10] AS x GROUP BY x ORDER BY x`,
      `SELECT x, count(*) FROM (SELECT unnest([PostTypeId, PostTypeId + 10]) AS x FROM ${GQ}) GROUP BY x ORDER BY x`],
    // groupArray, groupUniqArray, topK
    ['group_array_len', `SELECT PostTypeId, length(groupArray(Title)), length(groupArray(5)(Title)), length(groupUniqArray(OwnerDisplayName)), length(groupUniqArray(3)(OwnerDisplayName)) FROM ${P} GROUP BY PostTypeId ORDER BY PostTypeId`,
      `SELECT PostTypeId, count(Title), 5, count(DISTINCT OwnerDisplayName), 3 FROM ${Q} GROUP BY PostTypeId ORDER BY PostTypeId`],
    ['group_array_one_unit', `SELECT PostTypeId, groupArray(Id), groupArray(2)(Score) FROM file('{D}/small/part_00.parquet') WHERE Id < 300 GROUP BY PostTypeId ORDER BY PostTypeId`,
      `SELECT PostTypeId, list(Id), list(Score)[1:2] FROM (SELECT * FROM '${D}/small/part_00.parquet' WHERE Id < 300 ORDER BY Id) GROUP BY PostTypeId ORDER BY PostTypeId`,
      '-', 'one file of one row group is one unit: groupArray keeps its order'],
    ['topk', `SELECT topK(2)(if(Id % 10 < 5, 'a', if(Id % 10 < 8, 'b', toString(Id)))), topK(3)(PostTypeId * 0 + if(Id % 7 < 4, 1, if(Id % 7 < 6, 2, 3))) FROM ${P} WHERE Id < 40000`,
      `SELECT ['a', 'b'], [1, 2, 3]`, '-', 'clear frequencies (a 50%, b 30%, the rest once each; 4/7, 2/7, 1/7): the exact and the approximate topK agree'],
    ['topk_group', `SELECT PostTypeId, topK(1)(OwnerDisplayName = 'anon' OR Id % 4 = 0) FROM ${P} WHERE Id < 40000 GROUP BY PostTypeId ORDER BY PostTypeId`,
      `SELECT PostTypeId, [0] FROM ${Q} WHERE Id < 40000 GROUP BY PostTypeId ORDER BY PostTypeId`, '-', 'about 60% false in every group'],
    ['group_array_glob', `SELECT length(groupArray(Id)), length(groupUniqArray(PostTypeId)), topK(1)(PostTypeId % 2) FROM ${G}`,
      `SELECT count(Id), 3, [1] FROM ${GQ}`, '-', 'PostTypeId % 2: 1 for types 1 and 3'],
    ['group_by_array', `SELECT [PostTypeId, Score % 2] AS k, count() FROM ${P} WHERE Score IS NOT NULL GROUP BY k ORDER BY k`,
      `SELECT [PostTypeId, Score % 2] AS k, count(*) FROM ${Q} WHERE Score IS NOT NULL GROUP BY k ORDER BY k`,
      '-', 'arrays as keys; ORDER BY compares them element by element in both'],
    ['array_empty_input', `SELECT groupArray(Id), groupUniqArray(Title), topK(Score) FROM ${P} WHERE Id < 0`,
      `SELECT [], [], []`, '-', 'over no rows: empty arrays'],
    ['list_beside_flat', `SELECT Id FROM file('{D}/list.parquet') ORDER BY Id`,
      `SELECT Id FROM '${D}/list.parquet' ORDER BY Id`],
  ];
}

// Cases that read a subquery (compared on one server only: s3Cluster splits a
// file source, not a subquery): groupArray's and groupUniqArray's values as
// multisets, through ARRAY JOIN of the subquery's array column.
export function arrayLocalCases(P, Q, D) {
  return [
    ['group_array_values', `SELECT k, x FROM (SELECT PostTypeId AS k, groupArray(ViewCount) AS g FROM ${P} WHERE Id < 3000 GROUP BY k) ARRAY JOIN g AS x ORDER BY k, x`,
      `SELECT PostTypeId, ViewCount FROM ${Q} WHERE Id < 3000 AND ViewCount IS NOT NULL ORDER BY 1, 2`,
      '-', 'groupArray skips NULLs; its order is unspecified: the values as a multiset'],
    ['group_uniq_values', `SELECT k, x FROM (SELECT PostTypeId AS k, groupUniqArray(OwnerDisplayName) AS g FROM ${P} WHERE Id < 20000 GROUP BY k) ARRAY JOIN g AS x ORDER BY k, x`,
      `SELECT DISTINCT PostTypeId, OwnerDisplayName FROM ${Q} WHERE Id < 20000 AND OwnerDisplayName IS NOT NULL ORDER BY 1, 2`,
      '-', 'groupUniqArray: each value once, in no defined order (compared as a set)'],
  ];
}
