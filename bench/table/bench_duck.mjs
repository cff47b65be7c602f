// SPDX-License-Identifier: Apache-2.0
//
// bench_duck.mjs: the DuckDB half of bench/table. Loads DIR/data/posts_*.parquet
// (written by bench/engine/bench_gen.mjs) into an in-memory table once, then,
// RUNS times with one thread: writes it into a fresh DuckDB database file
// (CREATE TABLE AS from memory, then CHECKPOINT: the write of a table file
// from data already decoded, as the part writer is timed), and reads it back
// in a fresh instance over that file (every column decoded: sums of the
// numbers, of epoch() of the timestamp and of the strings' lengths).
//
//   node bench_duck.mjs DIR RUNS   -> DIR/duck_table.txt
//
// duck_table.txt: "write_s <median>", "read_s <median>", "file_bytes <n>",
// "rows <n>". Exits 77 (printing why) when the npm package is missing.
import { rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadDuckDB } from '../duckdb.mjs';

const duck = await loadDuckDB();
const [dir, runsArg] = process.argv.slice(2);
const runs = Number(runsArg || 3);
const ext = join(dir, 'duckdb_extensions');
const mem = await duck.DuckDBInstance.create(':memory:', { extension_directory: ext, threads: '1' });
const con = await mem.connect();
await con.run(`CREATE TABLE src AS SELECT * FROM read_parquet('${dir}/data/posts_*.parquet')`);
const rows = Number((await con.runAndReadAll('SELECT count(*) FROM src')).getRows()[0][0]);
const db = join(dir, 'posts.duckdb');
const median = (a) => a.sort((x, y) => x - y)[Math.floor(a.length / 2)];
const sec = (t) => Number(process.hrtime.bigint() - t) / 1e9;
const W = [], R = [];
let size = 0;
const readSql = `SELECT sum(Id), sum(PostTypeId), sum(epoch_us(CreationDate)), sum(Score),
  sum(ViewCount), sum(OwnerUserId), sum(length(OwnerDisplayName)), sum(length(Tags)),
  sum(length(Title)), sum(length(Body)) FROM posts`;
for (let r = 0; r < runs; r++) {
  rmSync(db, { force: true });
  rmSync(`${db}.wal`, { force: true });
  let t = process.hrtime.bigint();
  await con.run(`ATTACH '${db}' AS disk`);
  await con.run(`CREATE TABLE disk.posts AS SELECT * FROM src`);
  await con.run(`CHECKPOINT disk`);
  await con.run(`DETACH disk`);
  W.push(sec(t));
  size = statSync(db).size;
  const inst = await duck.DuckDBInstance.create(db, { extension_directory: ext, threads: '1' });
  const c2 = await inst.connect();
  t = process.hrtime.bigint();
  await c2.runAndReadAll(readSql);
  R.push(sec(t));
  c2.closeSync?.();
  inst.closeSync?.();
}
const out = `write_s ${median(W)}\nread_s ${median(R)}\nfile_bytes ${size}\nrows ${rows}\n`;
writeFileSync(join(dir, 'duck_table.txt'), out);
console.error(out.trim());
