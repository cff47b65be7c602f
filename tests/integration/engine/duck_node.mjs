// SPDX-License-Identifier: Apache-2.0
//
// duck_node.mjs: how this folder's generators load DuckDB (@duckdb/node-api)
// from the project's node_modules (RINGCACHE_NODE_MODULES, else the source
// folder's): the module, or exit 77 (skipped) saying the package is missing.
import { createRequire } from 'node:module';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export async function loadDuckDB() {
  const here = dirname(fileURLToPath(import.meta.url));
  const nm = process.env.RINGCACHE_NODE_MODULES || join(here, '..', '..', '..', 'node_modules');
  const req = createRequire(join(nm, 'noop.js'));
  try {
    return await import(pathToFileURL(req.resolve('@duckdb/node-api')).href);
  } catch (e) {
    console.error(`SKIP: npm package @duckdb/node-api is not installed under ${nm}: ${e.message}`);
    process.exit(77);
  }
}
