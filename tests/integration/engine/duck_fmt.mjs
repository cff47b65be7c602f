// SPDX-License-Identifier: Apache-2.0
//
// duck_fmt.mjs: a DuckDB value (@duckdb/node-api) as ClickHouse's TSV prints
// it, for the oracle tests: \N for NULL, escapes, and decimals without
// trailing zeros (ClickHouse's output_format_decimal_trailing_zeros = 0).
// `duck` is the imported @duckdb/node-api module.

const esc = (s) => s.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n');

export function duckText(duck, v) {
  if (v === null || v === undefined) return '\\N';
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
