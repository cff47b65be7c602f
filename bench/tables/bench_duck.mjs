// SPDX-License-Identifier: Apache-2.0
//
// bench_duck.mjs: the DuckDB half of bench/tables. From DIR/data/posts_*.parquet
// (written by bench/engine/bench_gen.mjs), RUNS times each at 1 and 2 threads:
// CREATE TABLE AS SELECT * FROM read_parquet(...) into a fresh DuckDB database
// file, then CHECKPOINT (the load the engine's INSERT INTO ... SELECT is
// compared with).
//
//   node bench_duck.mjs DIR RUNS   -> DIR/duck_tables.txt
//   node bench_duck.mjs DIR --seed -> DIR/duck_seed.txt
//
// duck_tables.txt: "ctas_1t <median s>", "ctas_2t <median s>", "rows <n>".
// duck_seed.txt: the seed query at 2 threads on a fresh instance over the
// file (warm OS page cache): "seed_first_2t <s>" its first run, "seed_2t <s>"
// its second (DuckDB's buffer pool warm). Exits 77 (printing why) when the
// npm package is missing.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadDuckDB } from '../duckdb.mjs';

const duck = await loadDuckDB();
const [dir, runsArg] = process.argv.slice(2);
const ext = join(dir, 'duckdb_extensions');
const db = join(dir, 'posts.duckdb');
const median = (a) => a.sort((x, y) => x - y)[Math.floor(a.length / 2)];
const sec = (t) => Number(process.hrtime.bigint() - t) / 1e9;

if (runsArg === '--seed') {
  const seed = `SELECT OwnerDisplayName, count(*) AS num_posts FROM posts WHERE OwnerDisplayName
    NOT IN ('', 'anon') GROUP BY OwnerDisplayName ORDER BY num_posts DESC LIMIT 5`;
  const inst = await duck.DuckDBInstance.create(db, { extension_directory: ext, threads: '2' });
  const con = await inst.connect();
  let t = process.hrtime.bigint();
  await con.runAndReadAll(seed);
  const first = sec(t);
  t = process.hrtime.bigint();
  await con.runAndReadAll(seed);
  writeFileSync(join(dir, 'duck_seed.txt'), `seed_first_2t ${first}\nseed_2t ${sec(t)}\n`);
  process.exit(0);
}
const runs = Number(runsArg || 3);
const out = {};
let rows = 0;
for (const threads of [1, 2]) {
  const T = [];
  for (let r = 0; r < runs; r++) {
    rmSync(db, { force: true });
    rmSync(`${db}.wal`, { force: true });
    const inst = await duck.DuckDBInstance.create(db, { extension_directory: ext,
                                                       threads: String(threads) });
    const con = await inst.connect();
    const t = process.hrtime.bigint();
    await con.run(`CREATE TABLE posts AS SELECT * FROM read_parquet('${dir}/data/posts_*.parquet')`);
    await con.run('CHECKPOINT');
    T.push(sec(t));
    rows = Number((await con.runAndReadAll('SELECT count(*) FROM posts')).getRows()[0][0]);
    con.closeSync?.();
    inst.closeSync?.();
  }
  out[`ctas_${threads}t`] = median(T);
}
const txt = Object.entries(out).map(([k, v]) => `${k} ${v}`).join('\n') + `\nrows ${rows}\n`;
writeFileSync(join(dir, 'duck_tables.txt'), txt);
console.error(txt.trim());
