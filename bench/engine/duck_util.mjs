// SPDX-License-Identifier: Apache-2.0
//
// duck_util.mjs: what the DuckDB halves of the engine's benches (bench_gen.mjs,
// sqljoin_gen.mjs) share beside bench/duckdb.mjs: a line of
// /proc/self/status in bytes, and the median time of a query over runs.
import { readFileSync } from 'node:fs';
import { loadDuckDB } from '../duckdb.mjs';

export const loadDuck = () => loadDuckDB();

export function status(k) {
  const m = readFileSync('/proc/self/status', 'utf8').match(new RegExp(`${k}:\\s+(\\d+) kB`));
  return m ? Number(m[1]) * 1024 : 0;
}

// The median time of a query over runs, in seconds.
export { medianSeconds as medianTime } from '../duckdb.mjs';
