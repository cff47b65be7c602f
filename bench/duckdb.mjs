// SPDX-License-Identifier: Apache-2.0
//
// duckdb.mjs: loads the npm package @duckdb/node-api (or another of
// package.json's, loadNpm) from the project's node_modules
// (RINGCACHE_NODE_MODULES, else the checkout's), or exits 77 saying why, as
// every bench that runs DuckDB beside us must.
import { createRequire } from 'node:module';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export async function loadDuckDB() {
  return loadNpm('@duckdb/node-api');
}

// Any of package.json's packages, found and refused the same way.
export async function loadNpm(name) {
  const here = dirname(fileURLToPath(import.meta.url));
  const nm = process.env.RINGCACHE_NODE_MODULES || join(here, '..', 'node_modules');
  const req = createRequire(join(nm, 'noop.js'));
  try {
    return await import(pathToFileURL(req.resolve(name)).href);
  } catch (e) {
    console.error(`SKIP: npm package ${name} is not installed under ${nm}: ${e.message}`);
    process.exit(77);
  }
}

// The median of `runs` timings of sql on con, in seconds.
export async function medianSeconds(con, sql, runs) {
  const ts = [];
  for (let r = 0; r < runs; r++) {
    const t = process.hrtime.bigint();
    await con.runAndReadAll(sql);
    ts.push(Number(process.hrtime.bigint() - t) / 1e9);
  }
  ts.sort((a, b) => a - b);
  return ts[Math.floor(ts.length / 2)];
}

// The CPU-seconds of this process (DuckDB's threads included) per run of sql
// on con, over `runs` runs: on a loaded machine a cost that the time of day
// does not change, where the wall time does.
export async function cpuSecondsPerRun(con, sql, runs) {
  const u0 = process.cpuUsage();
  for (let r = 0; r < runs; r++) await con.runAndReadAll(sql);
  const u = process.cpuUsage(u0);
  return (u.user + u.system) / 1e6 / runs;
}
