// SPDX-License-Identifier: Apache-2.0
//
// bench_gen.mjs: the DuckDB half of bench/engine. Writes a Stack-Overflow-
// shaped posts dataset with DuckDB (Id, PostTypeId, CreationDate, Score,
// ViewCount, OwnerUserId, OwnerDisplayName with many repeats and many '' and
// 'anon', Tags, Title, Body), ROWS rows sorted by Id in 4 files: two snappy,
// two zstd. Then times DuckDB on the same files (median of RUNS, warm page
// cache) and measures its peak memory as peak RSS minus RSS after start-up
// (VmHWM after resetting it through /proc/self/clear_refs, minus VmRSS):
//
//   node bench_gen.mjs DIR ROWS RUNS  -> DIR/data/posts_*.parquet, DIR/duckdb.txt
//
// RUNS 0 writes the data only (bench/coldwarm uses it that way).
//
// duckdb.txt: "<name> <seconds>" per measurement and "mem_seed_2t <bytes>".
// Exits 77 (printing why) when the npm package is missing.
import { createRequire } from 'node:module';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { medianSeconds } from '../duckdb.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const nm = process.env.RINGCACHE_NODE_MODULES || join(here, '..', '..', 'node_modules');
const req = createRequire(join(nm, 'noop.js'));
let duck;
try {
  duck = await import(pathToFileURL(req.resolve('@duckdb/node-api')).href);
} catch (e) {
  console.error(`SKIP: npm package @duckdb/node-api is not installed under ${nm}: ${e.message}`);
  process.exit(77);
}
const [dir, rowsArg, runsArg] = process.argv.slice(2);
const rows = Number(rowsArg || 20000000), runs = runsArg === undefined ? 3 : Number(runsArg);
mkdirSync(join(dir, 'data'), { recursive: true });
const inst = await duck.DuckDBInstance.create(':memory:', {
  extension_directory: join(dir, 'duckdb_extensions'), threads: '2' });
const con = await inst.connect();

const per = Math.ceil(rows / 4);
const t0 = Date.now();
for (let f = 0; f < 4; f++) {
  const lo = f * per, hi = Math.min(rows, lo + per);
  const codec = f < 2 ? 'snappy' : 'zstd';
  await con.run(`COPY (SELECT
    i::BIGINT AS Id,
    (1 + (hash(i) % 100 >= 40)::INTEGER) AS PostTypeId,
    TIMESTAMP '2008-07-31 00:00:00' + to_seconds(i * 25) AS CreationDate,
    ((hash(i * 3) % 1000)::INTEGER / 10 - 20) AS Score,
    CASE WHEN i % 3 = 0 THEN NULL ELSE (hash(i * 5) % 200000)::INTEGER END AS ViewCount,
    CASE WHEN i % 10 = 0 THEN NULL ELSE (hash(i * 7) % 3000000)::BIGINT END AS OwnerUserId,
    CASE WHEN hash(i * 11) % 100 < 30 THEN ''
         WHEN hash(i * 11) % 100 < 40 THEN 'anon'
         ELSE 'user' || (((hash(i * 13) % 1000)::BIGINT * (hash(i * 17) % 1000)::BIGINT) // 5)::VARCHAR END AS OwnerDisplayName,
    '<' || (ARRAY['c','python','java','sql','rust','go','js','css'])[1 + (hash(i) % 8)::BIGINT] || '><' ||
      (ARRAY['linux','arrays','regex','pandas','json'])[1 + (hash(i * 2) % 5)::BIGINT] || '>' AS Tags,
    'How to ' || (ARRAY['sort','parse','join','cache','query','merge'])[1 + (hash(i * 19) % 6)::BIGINT] ||
      ' a ' || (ARRAY['list','file','table','string','map'])[1 + (hash(i * 23) % 5)::BIGINT] || ' ' || (i % 9973)::VARCHAR AS Title,
    repeat((ARRAY['lorem ipsum ','dolor sit ','amet consectetur '])[1 + (hash(i * 29) % 3)::BIGINT], 2 + (hash(i * 31) % 4)::INTEGER) || (i % 100003)::VARCHAR AS Body
    FROM range(${lo}, ${hi}) t(i))
    TO '${dir}/data/posts_${f}.parquet' (FORMAT parquet, COMPRESSION ${codec})`);
}
console.error(`bench_gen: ${rows} rows written in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
if (runs === 0)
  process.exit(0);

const G = `'${dir}/data/posts_*.parquet'`;
const Q = {
  seed: `SELECT OwnerDisplayName, count(*) AS num_posts FROM ${G} WHERE OwnerDisplayName NOT IN ('', 'anon') GROUP BY OwnerDisplayName ORDER BY num_posts DESC LIMIT 5`,
  sum: `SELECT sum(Score), count(*) FROM ${G}`,
  pruned: `SELECT count(*), sum(Score) FROM ${G} WHERE Id >= ${Math.floor(rows * 0.3)} AND Id < ${Math.floor(rows * 0.3) + 200000}`,
};
const status = (k) => {
  const m = readFileSync('/proc/self/status', 'utf8').match(new RegExp(`${k}:\\s+(\\d+) kB`));
  return m ? Number(m[1]) * 1024 : 0;
};
const time = (sql) => medianSeconds(con, sql, runs);
let out = '';
await con.run(`SET threads = 1`);
await con.runAndReadAll(Q.seed); // warm the OS page cache
out += `seed_1t ${await time(Q.seed)}\n`;
await con.run(`SET threads = 2`);
out += `seed_2t ${await time(Q.seed)}\n`;
out += `sum_2t ${await time(Q.sum)}\n`;
out += `pruned_2t ${await time(Q.pruned)}\n`;
// memory: a fresh instance, HWM reset after start-up
const inst2 = await duck.DuckDBInstance.create(':memory:', {
  extension_directory: join(dir, 'duckdb_extensions'), threads: '2' });
const con2 = await inst2.connect();
await con2.runAndReadAll('SELECT 1');
globalThis.gc?.();
try { writeFileSync('/proc/self/clear_refs', '5'); } catch { /* old kernels: HWM since start */ }
const base = status('VmRSS');
await con2.runAndReadAll(Q.seed);
out += `mem_seed_2t ${status('VmHWM') - base}\n`;
writeFileSync(join(dir, 'duckdb.txt'), out);
console.error(out.trim());
