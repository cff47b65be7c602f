// SPDX-License-Identifier: Apache-2.0
//
// cases_sqlfn.mjs: gen.mjs's cases for DISTINCT, the aggregate combinators
// (-If, -Distinct), quantiles, moments, argMin/argMax, SELECT * EXCEPT /
// REPLACE, COLUMNS('re') and array literals in IN and has(). Each runs on the
// posts (NULLs in ViewCount, OwnerUserId and Title), and the forms a user
// types most also on no rows, one row and the glob of 12 small files.
// Where ClickHouse and DuckDB differ the DuckDB side is written to give
// ClickHouse's answer, and the note says how; values ClickHouse's
// documentation states are checked as such (the DuckDB side is the literal).
//
// Algorithms, as the engine's README says: quantile/median keep every value
// and interpolate linearly at level * (n - 1), which is ClickHouse's
// reservoir answer while a group has at most 8192 values (DuckDB
// quantile_cont); quantileExact is ClickHouse's element at index
// floor(level * n) of the sorted values.

// A DuckDB expression for ClickHouse's quantileExact(level)(x).
const qexact = (x, level) =>
  `list_sort(list(${x}) FILTER (WHERE ${x} IS NOT NULL))[floor(${level} * count(${x}))::BIGINT + 1]`;

export function sqlfnCases(P, Q, D) {
  const G = `file('{D}/small/part_*.parquet')`, GQ = `'${D}/small/part_*.parquet'`;
  return [
    // DISTINCT
    ['distinct', `SELECT DISTINCT PostTypeId, OwnerDisplayName FROM ${P} WHERE OwnerDisplayName LIKE 'User_1%' ORDER BY PostTypeId, OwnerDisplayName`,
      `SELECT DISTINCT PostTypeId, OwnerDisplayName FROM ${Q} WHERE OwnerDisplayName LIKE 'User\\_1%' ESCAPE '\\' ORDER BY PostTypeId, OwnerDisplayName`,
      '-', "LIKE's _ matches any byte in both; DuckDB escapes it here only to keep the same rows: 'User_1%' starts every such name"],
    ['distinct_nulls', `SELECT DISTINCT OwnerUserId % 3 AS k, Title IS NULL FROM ${P}`,
      `SELECT DISTINCT OwnerUserId % 3 AS k, (Title IS NULL)::INT FROM ${Q}`, 'sorted', 'NULL is one distinct value'],
    // toUnixTimestamp of a DateTime column (DuckDB's epoch of the same TIMESTAMP)
    ['unix_timestamp', `SELECT Id, toUnixTimestamp(CreationDate), toUnixTimestamp(toDate(CreationDate)) FROM ${P} WHERE Id < 500 ORDER BY Id`,
      `SELECT Id, epoch(CreationDate)::BIGINT, epoch(CreationDate::DATE)::BIGINT FROM ${Q} WHERE Id < 500 ORDER BY Id`, 'exact'],
    ['distinct_glob', `SELECT DISTINCT PostTypeId FROM ${G} ORDER BY PostTypeId`,
      `SELECT DISTINCT PostTypeId FROM ${GQ} ORDER BY PostTypeId`],
    ['distinct_empty', `SELECT DISTINCT Title FROM ${P} WHERE Id < 0`, `SELECT DISTINCT Title FROM ${Q} WHERE Id < 0`, 'sorted'],
    ['distinct_star_limit', `SELECT DISTINCT * EXCEPT (Id, CreationDate, Day, Ratio, Score, ViewCount, OwnerUserId, Tags, Title) FROM ${P} ORDER BY 1, 2 LIMIT 5`,
      `SELECT DISTINCT * EXCLUDE (Id, CreationDate, Day, Ratio, Score, ViewCount, OwnerUserId, Tags, Title) FROM ${Q} ORDER BY 1, 2 LIMIT 5`],
    // count(DISTINCT) and -Distinct
    ['count_distinct', `SELECT PostTypeId, count(DISTINCT OwnerDisplayName), count(DISTINCT ViewCount), countDistinct(Title), sumDistinct(Score), avgDistinct(ViewCount), sum(DISTINCT Ratio) FROM ${P} GROUP BY PostTypeId ORDER BY PostTypeId`,
      `SELECT PostTypeId, count(DISTINCT OwnerDisplayName), count(DISTINCT ViewCount), count(DISTINCT Title), sum(DISTINCT Score), avg(DISTINCT ViewCount), sum(DISTINCT Ratio) FROM ${Q} GROUP BY PostTypeId ORDER BY PostTypeId`,
      '-', 'count(DISTINCT x) runs as uniqExact(x) (NULLs not counted)'],
    // many groups: past 64K groups three threads or more merge their tables by key partitions
    // (the _3t case; at 1 and 2 threads the tables merge into the first)
    ['group_many_parts_3t', `SELECT count(), sum(c), sum(s), sum(u), max(t) FROM (SELECT Id % 150000 AS k, count() AS c, sum(Score) AS s, uniqExact(OwnerUserId) AS u, max(Title) AS t FROM ${P} GROUP BY k HAVING c > 1) SETTINGS max_threads = 3`,
      `SELECT count(*), sum(c), sum(s), sum(u), max(t) FROM (SELECT Id % 150000 AS k, count(*) AS c, sum(Score) AS s, count(DISTINCT OwnerUserId) AS u, max(Title) AS t FROM ${Q} GROUP BY k HAVING count(*) > 1)`],
    ['group_many_order_3t', `SELECT Id % 150000 AS k, count(), sum(Score), min(OwnerDisplayName) FROM ${P} GROUP BY k ORDER BY k DESC LIMIT 5 SETTINGS max_threads = 3`,
      `SELECT Id % 150000 AS k, count(*), sum(Score), min(OwnerDisplayName) FROM ${Q} GROUP BY k ORDER BY k DESC LIMIT 5`],
    ['group_many_parts', `SELECT count(), sum(c), sum(s), sum(u), max(t) FROM (SELECT Id % 150000 AS k, count() AS c, sum(Score) AS s, uniqExact(OwnerUserId) AS u, max(Title) AS t FROM ${P} GROUP BY k HAVING c > 1)`,
      `SELECT count(*), sum(c), sum(s), sum(u), max(t) FROM (SELECT Id % 150000 AS k, count(*) AS c, sum(Score) AS s, count(DISTINCT OwnerUserId) AS u, max(Title) AS t FROM ${Q} GROUP BY k HAVING count(*) > 1)`],
    ['group_many_order', `SELECT Id % 150000 AS k, count(), sum(Score), min(OwnerDisplayName) FROM ${P} GROUP BY k ORDER BY k DESC LIMIT 5`,
      `SELECT Id % 150000 AS k, count(*), sum(Score), min(OwnerDisplayName) FROM ${Q} GROUP BY k ORDER BY k DESC LIMIT 5`],
    // ORDER BY ... LIMIT over many groups: the groups are ranked before their output columns are
    // made; OFFSET, HAVING, an ORDER BY expression that is not an output and ties broken by a key
    ['group_top_offset', `SELECT Id % 150000 AS k, count() AS c, min(OwnerDisplayName) FROM ${P} GROUP BY k ORDER BY c DESC, k LIMIT 3, 7`,
      `SELECT Id % 150000 AS k, count(*) AS c, min(OwnerDisplayName) FROM ${Q} GROUP BY k ORDER BY c DESC, k LIMIT 7 OFFSET 3`],
    ['group_top_having_3t', `SELECT Id % 150000 AS k, sum(Score) AS s FROM ${P} GROUP BY k HAVING count() > 1 ORDER BY s % 1000 DESC, k LIMIT 6 SETTINGS max_threads = 3`,
      `SELECT Id % 150000 AS k, sum(Score) AS s FROM ${Q} GROUP BY k HAVING count(*) > 1 ORDER BY s % 1000 DESC, k LIMIT 6`],
    ['group_top_ties_1t', `SELECT OwnerDisplayName, count() AS c FROM ${P} GROUP BY OwnerDisplayName ORDER BY c, OwnerDisplayName DESC LIMIT 8 SETTINGS max_threads = 1`,
      `SELECT OwnerDisplayName, count(*) AS c FROM ${Q} GROUP BY OwnerDisplayName ORDER BY c, OwnerDisplayName DESC LIMIT 8`],
    // a constant ORDER BY key beside a real one: one value, not a column of them
    ['group_top_const_key', `SELECT Id % 150000 AS k, count() AS c FROM ${P} GROUP BY k ORDER BY toInt64(7), k DESC LIMIT 3`,
      `SELECT Id % 150000 AS k, count(*) AS c FROM ${Q} GROUP BY k ORDER BY CAST(7 AS BIGINT), k DESC LIMIT 3`],
    ['group_top_const_float', `SELECT Id % 150000 AS k, count() AS c FROM ${P} GROUP BY k ORDER BY 2.5 + 1, k LIMIT 4`,
      `SELECT Id % 150000 AS k, count(*) AS c FROM ${Q} GROUP BY k ORDER BY 2.5 + 1, k LIMIT 4`],
    ['count_distinct_glob', `SELECT count(DISTINCT OwnerUserId), count(DISTINCT Title), sumDistinct(Score) FROM ${G}`,
      `SELECT count(DISTINCT OwnerUserId), count(DISTINCT Title), sum(DISTINCT Score) FROM ${GQ}`],
    // sets of more than 65536 values in all: at 2 threads the workers' sets merge by threads
    ['count_distinct_many', `SELECT count(DISTINCT Id), uniqExact(Id * 7), count(DISTINCT toString(Id)), sumDistinct(Id % 150000), avgDistinct(Id % 90000), count(DISTINCT Id % 2), countDistinct(ViewCount) FROM ${G}`,
      `SELECT count(DISTINCT Id), count(DISTINCT Id * 7), count(DISTINCT Id::VARCHAR), sum(DISTINCT Id % 150000), avg(DISTINCT Id % 90000), count(DISTINCT Id % 2), count(DISTINCT ViewCount) FROM ${GQ}`],
    ['count_distinct_many_where', `SELECT count(DISTINCT Id), sumDistinct(Id) FROM ${P} WHERE Id % 3 = 0 OR Id < 100`,
      `SELECT count(DISTINCT Id), sum(DISTINCT Id) FROM ${Q} WHERE Id % 3 = 0 OR Id < 100`],
    // -If
    ['if_combinator', `SELECT PostTypeId, countIf(Score > 0), countIf(ViewCount, Score > 0), sumIf(Score, ViewCount > 50000), avgIf(ViewCount, Score > 10), minIf(Title, Score = 7), maxIf(CreationDate, Score < -40), uniqIf(OwnerUserId, Score > 100), uniqExactIf(Title, Id % 2 = 0), sumIf(Ratio, Title IS NULL), sumIf(coalesce(Ratio, 0), Title IS NULL) FROM ${P} GROUP BY PostTypeId ORDER BY PostTypeId`,
      `SELECT PostTypeId, count(*) FILTER (WHERE Score > 0), count(ViewCount) FILTER (WHERE Score > 0), coalesce(sum(Score) FILTER (WHERE ViewCount > 50000), 0), avg(ViewCount) FILTER (WHERE Score > 10), min(Title) FILTER (WHERE Score = 7), strftime(max(CreationDate) FILTER (WHERE Score < -40), '%Y-%m-%d %H:%M:%S.%f'), count(DISTINCT OwnerUserId) FILTER (WHERE Score > 100), count(DISTINCT Title) FILTER (WHERE Id % 2 = 0), sum(Ratio) FILTER (WHERE Title IS NULL), coalesce(sum(Ratio) FILTER (WHERE Title IS NULL), 0) FROM ${Q} GROUP BY PostTypeId ORDER BY PostTypeId`,
      '-', 'sumIf of a non-Nullable column is 0 when no row passes (DuckDB: NULL), of a Nullable one (every column DuckDB writes) NULL; a NULL condition does not pass'],
    ['if_combinator_glob', `SELECT OwnerDisplayName, countIf(Score > 0) AS c, sumIf(Score, PostTypeId = 2) FROM ${G} GROUP BY OwnerDisplayName ORDER BY c DESC, OwnerDisplayName LIMIT 10`,
      `SELECT OwnerDisplayName, count(*) FILTER (WHERE Score > 0) AS c, coalesce(sum(Score) FILTER (WHERE PostTypeId = 2), 0) FROM ${GQ} GROUP BY OwnerDisplayName ORDER BY c DESC, OwnerDisplayName LIMIT 10`],
    ['if_empty', `SELECT countIf(Score > 0), sumIf(coalesce(Score, 0), Score > 0), avgIf(coalesce(Score, 0), Score > 0), sumIf(ViewCount, Score > 0), count(DISTINCT Title), median(coalesce(Score, 0)), quantileExact(coalesce(Score, 0)), varPop(coalesce(Ratio, 0)), median(Score) FROM ${P} WHERE Id < 0`,
      `SELECT 0, 0, 'nan', NULL, 0, 'nan', 0, 'nan', NULL`, '-', 'ClickHouse: over no rows countIf and sumIf of a non-Nullable are 0, avgIf, median and varPop nan, quantileExact the default 0; of a Nullable argument NULL'],
    // quantiles
    ['quantiles', `SELECT PostTypeId, median(Score), quantile(0.9)(Score), quantile(0.25)(ViewCount), quantile(1)(Ratio), quantile(0)(Ratio), quantileExact(0.5)(Score), quantileExact(0.9)(ViewCount), medianExact(Ratio) FROM ${P} WHERE Id < 6000 GROUP BY PostTypeId ORDER BY PostTypeId`,
      `SELECT PostTypeId, quantile_cont(Score, 0.5), quantile_cont(Score, 0.9), quantile_cont(ViewCount, 0.25), quantile_cont(Ratio, 1), quantile_cont(Ratio, 0), ${qexact('Score', 0.5)}, ${qexact('ViewCount', 0.9)}, ${qexact('Ratio', 0.5)} FROM ${Q} WHERE Id < 6000 GROUP BY PostTypeId ORDER BY PostTypeId`,
      '-', 'at most 8192 values a group, where ClickHouse\'s reservoir holds them all: quantile interpolates as quantile_cont; quantileExact is the element at floor(level * n)'],
    ['quantiles_glob', `SELECT median(Score), quantileExact(0.75)(Score), quantile(0.99)(ViewCount) FROM ${G}`,
      `SELECT quantile_cont(Score, 0.5), ${qexact('Score', 0.75)}, quantile_cont(ViewCount, 0.99) FROM ${GQ}`,
      '-', 'over 200000 values the engine stays exact (ClickHouse would sample 8192)'],
    ['quantiles_doc', `SELECT quantile(Score), quantileExact(Score), median(Ratio) FROM file('{D}/doc_values.csv')`,
      `SELECT 1.5, 2, 4.5`, '-', "ClickHouse's documentation: quantile of 1, 1, 2, 3 is 1.5; quantileExact of the same is 2 (floor(0.5 * 4) = index 2); Ratio is 0..9 there"],
    // moments
    ['moments', `SELECT PostTypeId, varPop(Score), varSamp(Score), stddevPop(ViewCount), stddevSamp(Ratio), corr(Score, Ratio), corr(ViewCount, Id) FROM ${P} GROUP BY PostTypeId ORDER BY PostTypeId`,
      `SELECT PostTypeId, var_pop(Score), var_samp(Score), stddev_pop(ViewCount), stddev_samp(Ratio), corr(Score, Ratio), corr(ViewCount, Id) FROM ${Q} GROUP BY PostTypeId ORDER BY PostTypeId`],
    ['one_row', `SELECT varSamp(Score), varPop(Score), stddevSamp(Ratio), median(Score), quantileExact(0.9)(Score), anyLast(Title), argMax(Title, Id), sumDistinct(Score), countIf(Score > 1000) FROM ${P} WHERE Id = 7`,
      `SELECT 'nan', 0, 'nan', Score::DOUBLE, Score, Title, Title, Score, 0 FROM ${Q} WHERE Id = 7`,
      '-', 'ClickHouse: varSamp and stddevSamp of one value are nan (DuckDB NULL), varPop 0'],
    ['argmin_argmax', `SELECT PostTypeId, argMax(OwnerDisplayName, CreationDate), argMin(Score, Id), argMax(Id, CreationDate), argMin(Title, Ratio * 1000000 + Id), argMax(Day, Score * 1000000 - Id) FROM ${P} GROUP BY PostTypeId ORDER BY PostTypeId`,
      `SELECT PostTypeId, arg_max(OwnerDisplayName, CreationDate), arg_min(Score, Id), arg_max(Id, CreationDate), arg_min(Title, Ratio * 1000000 + Id) FILTER (WHERE Title IS NOT NULL), strftime(arg_max(Day, Score * 1000000 - Id), '%Y-%m-%d') FROM ${Q} GROUP BY PostTypeId ORDER BY PostTypeId`,
      '-', 'keys without ties; a NULL value is skipped as ClickHouse skips NULL arguments'],
    // SELECT list forms
    ['star_except_replace', `SELECT * EXCEPT (Tags, Title, CreationDate, Day) REPLACE (Score * 2 AS Score, upper(OwnerDisplayName) AS OwnerDisplayName) FROM ${P} WHERE Id < 6 ORDER BY Id`,
      `SELECT * EXCLUDE (Tags, Title, CreationDate, Day) REPLACE (Score * 2 AS Score, upper(OwnerDisplayName) AS OwnerDisplayName) FROM ${Q} WHERE Id < 6 ORDER BY Id`],
    ['columns_regex', `SELECT COLUMNS('^(Id|Score|Owner.*)$') FROM ${P} WHERE Id % 5000 = 3 ORDER BY Id`,
      `SELECT COLUMNS('^(Id|Score|Owner.*)$') FROM ${Q} WHERE Id % 5000 = 3 ORDER BY Id`],
    ['in_array', `SELECT PostTypeId, count() FROM ${P} WHERE Score IN [1, 2, 3] AND has([1, 3], PostTypeId) AND OwnerDisplayName NOT IN ['', 'anon'] GROUP BY PostTypeId ORDER BY PostTypeId`,
      `SELECT PostTypeId, count(*) FROM ${Q} WHERE Score IN (1, 2, 3) AND PostTypeId IN (1, 3) AND OwnerDisplayName NOT IN ('', 'anon') GROUP BY PostTypeId ORDER BY PostTypeId`],
    // LIMIT BY
    ['limit_by', `SELECT PostTypeId, Id, Score FROM ${P} WHERE Id < 3000 ORDER BY Score DESC, Id LIMIT 2 BY PostTypeId`,
      `SELECT PostTypeId, Id, Score FROM ${Q} WHERE Id < 3000 QUALIFY row_number() OVER (PARTITION BY PostTypeId ORDER BY Score DESC, Id) <= 2 ORDER BY Score DESC, Id`],
    ['limit_by_offset_group', `SELECT OwnerDisplayName, toYear(Day) AS y, count() AS c FROM ${P} GROUP BY OwnerDisplayName, y ORDER BY c DESC, OwnerDisplayName, y LIMIT 1, 2 BY y LIMIT 10`,
      `SELECT * FROM (SELECT OwnerDisplayName, year(Day) AS y, count(*) AS c FROM ${Q} GROUP BY ALL) QUALIFY row_number() OVER (PARTITION BY y ORDER BY c DESC, OwnerDisplayName) BETWEEN 2 AND 3 ORDER BY c DESC, OwnerDisplayName, y LIMIT 10`,
      '-', 'LIMIT 1, 2 BY y skips the first row of each y and keeps two; the LIMIT 10 after it cuts the rest'],
    ['limit_by_glob_nulls', `SELECT OwnerUserId % 3 AS k, Id FROM ${G} ORDER BY Id LIMIT 3 OFFSET 1 BY k`,
      `SELECT OwnerUserId % 3 AS k, Id FROM ${GQ} QUALIFY row_number() OVER (PARTITION BY OwnerUserId % 3 ORDER BY Id) BETWEEN 2 AND 4 ORDER BY Id`,
      '-', 'NULL is one key'],
    // functions
    ['fn_dates', `SELECT Id, toStartOfHour(CreationDate), toStartOfMinute(CreationDate), toStartOfWeek(Day), toMonday(Day), toStartOfQuarter(CreationDate), toStartOfYear(Day), toYYYYMM(Day), toYYYYMMDD(CreationDate), toDayOfWeek(Day), toHour(CreationDate), toMinute(CreationDate), toSecond(CreationDate), toQuarter(Day), toDayOfYear(Day), dateAdd(month, 1, Day), Day - INTERVAL 3 DAY, CreationDate + INTERVAL 90 MINUTE, addYears(Day, 1), dateSub('week', 2, CreationDate), formatDateTime(CreationDate, '%Y/%m/%d %H:%i:%S') FROM ${P} WHERE Id % 997 = 1 ORDER BY Id LIMIT 40`,
      `SELECT Id, strftime(date_trunc('hour', CreationDate), '%Y-%m-%d %H:%M:%S.%f'), strftime(date_trunc('minute', CreationDate), '%Y-%m-%d %H:%M:%S.%f'), strftime(Day - dayofweek(Day)::INTEGER, '%Y-%m-%d'), strftime(date_trunc('week', Day), '%Y-%m-%d'), strftime(date_trunc('quarter', CreationDate), '%Y-%m-%d'), strftime(date_trunc('year', Day), '%Y-%m-%d'), year(Day) * 100 + month(Day), (year(CreationDate) * 100 + month(CreationDate)) * 100 + day(CreationDate), isodow(Day), hour(CreationDate), minute(CreationDate), second(CreationDate), quarter(Day), dayofyear(Day), strftime((Day + INTERVAL 1 MONTH)::DATE, '%Y-%m-%d'), strftime((Day - INTERVAL 3 DAY)::DATE, '%Y-%m-%d'), strftime(CreationDate + INTERVAL 90 MINUTE, '%Y-%m-%d %H:%M:%S.%f'), strftime((Day + INTERVAL 1 YEAR)::DATE, '%Y-%m-%d'), strftime(CreationDate - INTERVAL 14 DAY, '%Y-%m-%d %H:%M:%S.%f'), strftime(CreationDate, '%Y/%m/%d %H:%M:%S') FROM ${Q} WHERE Id % 997 = 1 ORDER BY Id LIMIT 40`,
      '-', 'toStartOfWeek starts weeks on Sunday (mode 0), toMonday on Monday; a month added to the 31st clamps to the month\'s last day in both; formatDateTime\'s %i is the minute'],
    ['fn_strings', `SELECT Id, replaceAll(Title, ' ', '_'), replaceRegexpAll(Tags, '[<>]', ''), replaceRegexpOne(Title, 'x([0-9]+)', 'n\\\\1'), match(Title, '^How do I [a-z]+ x1'), extract(Tags, 'tag([0-9]+)'), trimBoth(concat('  ', OwnerDisplayName, ' ')), trimLeft(concat('  ', Tags)), reverse(Tags), empty(OwnerDisplayName), notEmpty(OwnerDisplayName) FROM ${P} WHERE Id < 40 ORDER BY Id`,
      `SELECT Id, replace(Title, ' ', '_'), regexp_replace(Tags, '[<>]', '', 'g'), regexp_replace(Title, 'x([0-9]+)', 'n\\1'), regexp_matches(Title, '^How do I [a-z]+ x1')::INT, regexp_extract(Tags, 'tag([0-9]+)', 1), trim(concat('  ', OwnerDisplayName, ' ')), ltrim(concat('  ', Tags)), reverse(Tags), (OwnerDisplayName = '')::INT, (OwnerDisplayName <> '')::INT FROM ${Q} WHERE Id < 40 ORDER BY Id`,
      '-', 'extract gives the first group (the whole match without one); match and empty return UInt8'],
    ['fn_math_conv', `SELECT Id, intDiv(Score, 7), intDiv(Id, 3), pow(Ratio, 2), sqrt(Id), log(Id + 1), log10(Id + 1), exp(Ratio / 100), floor(Ratio, 1), ceil(Ratio), trunc(Score / 7, 1), floor(Id, -1), toString(Score), toInt32(Ratio), toFloat64(Score) / 2, toUInt16(Id), toInt64OrZero(OwnerDisplayName), toInt64OrNull(substring(OwnerDisplayName, 6)), ifNull(ViewCount, -1), nullIf(PostTypeId, 2), assumeNotNull(ViewCount) FROM ${P} WHERE Id < 40 ORDER BY Id`,
      `SELECT Id, trunc(Score / 7)::BIGINT, Id // 3, pow(Ratio, 2), sqrt(Id), ln(Id + 1), log10(Id + 1), exp(Ratio / 100), floor(Ratio * 10) / 10, ceil(Ratio), trunc(Score / 7 * 10) / 10, (Id // 10) * 10, Score::VARCHAR, trunc(Ratio)::INTEGER, Score / 2, Id, coalesce(TRY_CAST(OwnerDisplayName AS BIGINT), 0), TRY_CAST(substring(OwnerDisplayName, 6) AS BIGINT), coalesce(ViewCount, -1), nullif(PostTypeId, 2), coalesce(ViewCount, 0) FROM ${Q} WHERE Id < 40 ORDER BY Id`,
      '-', 'intDiv and toInt32 of a float truncate toward zero; assumeNotNull of NULL reads as the default 0'],
    ['fn_ignore', `SELECT count() FROM ${P} WHERE NOT ignore(*)`, `SELECT count(*) FROM ${Q}`],
    ['fn_ignore_args', `SELECT Id, ignore(Title, Score + 1) FROM ${P} WHERE Id < 40 ORDER BY Id`,
      `SELECT Id, 0 FROM ${Q} WHERE Id < 40 ORDER BY Id`, '-', 'ignore(...) is 0 whatever it reads; NOT ignore(*) keeps every row'],
    ['fn_ignore_where', `SELECT count() FROM ${P} WHERE ignore(*) OR Id < 40`,
      `SELECT count(*) FROM ${Q} WHERE Id < 40`],
    ['fn_glob', `SELECT toYYYYMM(Day) AS m, countIf(Score > 0), sumIf(Score, match(Title, 'cache')), uniqExactIf(OwnerUserId, toDayOfWeek(Day) = 7) FROM ${G} GROUP BY m ORDER BY m LIMIT 12`,
      `SELECT year(Day) * 100 + month(Day) AS m, count(*) FILTER (WHERE Score > 0), coalesce(sum(Score) FILTER (WHERE regexp_matches(Title, 'cache')), 0), count(DISTINCT OwnerUserId) FILTER (WHERE isodow(Day) = 7) FROM ${GQ} GROUP BY m ORDER BY m LIMIT 12`],
  ];
}

// The small files some cases read besides the posts.
export async function sqlfnData(con, D) {
  await con.run(`COPY (SELECT * FROM (VALUES (1, 0.0), (1, 1.0), (2, 2.0), (3, 3.0), (NULL, 4.0), (NULL, 5.0), (NULL, 6.0), (NULL, 7.0), (NULL, 8.0), (NULL, 9.0)) t(Score, Ratio)) TO '${D}/doc_values.csv' (HEADER true)`);
}
