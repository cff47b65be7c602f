// SPDX-License-Identifier: Apache-2.0
//
// duck_fmt.mjs: a DuckDB value (@duckdb/node-api) as ClickHouse's TSV prints
// it, for the oracle tests: \N for NULL, escapes, and decimals without
// trailing zeros (ClickHouse's output_format_decimal_trailing_zeros = 0), lists
// as ClickHouse prints arrays.
// `duck` is the imported @duckdb/node-api module.

const esc = (s) => s.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n');

// A string inside an array as ClickHouse quotes it (writeQuotedString).
const quoted = (s) => "'" + s.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\t/g, '\\t')
  .replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\0/g, '\\0') + "'";

// A DuckDB list as ClickHouse prints an Array: [1,2], ['a','b'], [NULL], nested.
function arrayText(duck, v) {
  return '[' + v.items.map((x) => {
    if (x === null || x === undefined) return 'NULL';
    if (x instanceof duck.DuckDBListValue) return arrayText(duck, x);
    if (typeof x === 'string') return quoted(x);
    if (x instanceof duck.DuckDBDateValue || x instanceof duck.DuckDBTimestampValue) return quoted(x.toString());
    return duckText(duck, x);
  }).join(',') + ']';
}

export function duckText(duck, v) {
  if (v === null || v === undefined) return '\\N';
  if (v instanceof duck.DuckDBListValue) return arrayText(duck, v);
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return Number.isNaN(v) ? 'nan' : String(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'string') return esc(v);
  if (v instanceof duck.DuckDBDecimalValue) {
    const t = v.toString();
    return t.includes('.') ? t.replace(/0+$/, '').replace(/\.$/, '') : t;
  }
  return esc(v.toString());
}
