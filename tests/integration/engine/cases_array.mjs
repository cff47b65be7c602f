// SPDX-License-Identifier: Apache-2.0
//
// cases_array.mjs: gen.mjs's cases for Parquet files with nested columns
// (LIST, MAP, STRUCT as DuckDB writes them): the file's flat columns are read
// as in any other file while the nested ones are left out of the query.

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

export function arrayCases(P, Q, D) {
  const N = `file('{D}/nested.parquet')`, NQ = `'${D}/nested.parquet'`;
  return [
    // the flat columns of a file with nested ones
    ['nested_flat_cols', `SELECT Id, After FROM ${N} WHERE Id % 250 = 7 ORDER BY Id`,
      `SELECT Id, After FROM ${NQ} WHERE Id % 250 = 7 ORDER BY Id`],
    ['nested_flat_agg', `SELECT After, count(), sum(Id) FROM ${N} GROUP BY After ORDER BY After`,
      `SELECT After, count(*), sum(Id) FROM ${NQ} GROUP BY After ORDER BY After`],
    ['nested_star_except', `SELECT * EXCEPT (L, S, M, T) FROM ${N} WHERE Id < 5 ORDER BY Id`,
      `SELECT Id, After FROM ${NQ} WHERE Id < 5 ORDER BY Id`],
    ['nested_count', `SELECT count() FROM ${N}`, `SELECT count(*) FROM ${NQ}`],
    ['list_beside_flat', `SELECT Id FROM file('{D}/list.parquet') ORDER BY Id`,
      `SELECT Id FROM '${D}/list.parquet' ORDER BY Id`],
  ];
}
