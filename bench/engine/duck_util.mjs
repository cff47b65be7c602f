// SPDX-License-Identifier: Apache-2.0
//
// duck_util.mjs: what the DuckDB halves of the engine's benches (bench_gen.mjs,
// sqljoin_gen.mjs) share: loading @duckdb/node-api from the repository's
// node_modules (exit 77, saying why, when it is missing), a line of
// /proc/self/status in bytes, and the median time of a query over runs.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export async function loadDuck(here) {
  const nm = process.env.RINGCACHE_NODE_MODULES || join(here, '..', '..', 'node_modules');
  const req = createRequire(join(nm, 'noop.js'));
  try {
    return await import(pathToFileURL(req.resolve('@duckdb/node-api')).href);
  } catch (e) {
    console.error(`SKIP: npm package @duckdb/node-api is not installed under ${nm}: ${e.message}`);
    process.exit(77);
  }
}

export function status(k) {
  const m = readFileSync('/proc/self/status', 'utf8').match(new RegExp(`${k}:\\s+(\\d+) kB`));
  return m ? Number(m[1]) * 1024 : 0;
}

export async function medianTime(con, sql, runs) {
  const ts = [];
  for (let r = 0; r < runs; r++) {
    const t = process.hrtime.bigint();
    await con.runAndReadAll(sql);
    ts.push(Number(process.hrtime.bigint() - t) / 1e9);
  }
  ts.sort((a, b) => a - b);
  return ts[Math.floor(ts.length / 2)];
}
