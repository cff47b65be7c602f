// SPDX-License-Identifier: Apache-2.0
//
// coldwarm_table.mjs: the table workload of the cold-versus-warm benchmark,
// the distributed-cache post's own: an Amazon-reviews-shaped MergeTree table
// (reviews_gen.mjs writes the Parquet files with DuckDB), loaded by
//   INSERT INTO amazon_reviews SELECT * FROM s3('s3://BUCKET/reviews/*.parquet')
// through `ringcache server` and three cache nodes into a warehouse on the
// same S3 (behind the S3 model: its first-byte delay and its per-connection
// bandwidth, every request counted), then two queries:
//   (a) SELECT count() FROM amazon_reviews WHERE NOT ignore(*)   every column
//   (b) SELECT * FROM amazon_reviews WHERE review_date IN [20 dates]
//       FORMAT Null   a few scattered granules through the primary index,
//       --scattered runs of 20 dates each, p50 / p99 of their times
// in the post's five set-ups, each compute node a `ringcache server` process
// reaching the cache nodes through its own netproxy (LAN latency, a cap per
// compute node), as bench/coldwarm/coldwarm.c's readers do:
//   1  S3 directly: a server without cache nodes, its page cache dropped
//      (cold), then again (its page cache warm); and the same server on the
//      local Parquet files (file(), the OS page cache warm), the peer a hot
//      server is held against
//   2  a server on three cold cache nodes: the first load
//   3  that server again, its page cache dropped: the blocks from the nodes
//   4  a second server (a new process) on the warm nodes, then that same
//      server again, its page cache warm
//   5  six servers at once on three cold nodes (S3 GETs per block of the
//      table), then again on the warm nodes, page caches dropped
// A run with a warm page cache (the files', a server's) is the median of
// three. Each (a) and (b) answers the same everywhere (count, and the rows of (b)
// counted once against the local files). Writes a Markdown table to --md and
// ends with (bench/README.md's convention):
//   coldwarm-table: second_node_vs_first=<2's (a) s / 4's first (a) s>
//     hot_server_vs_local=<local (a) s / 4's second (a) s>
//     scattered_p50_ms_second_node=<ms> six_servers_s3_gets_per_block=<n>
//
//   node coldwarm_table.mjs --rows N --s3 URL --s3-admin PORT --s3-direct URL
//        --bucket B --dir DIR --md FILE [--latency-us U] [--bandwidth-mib X]
//        [--threads T] [--scattered K]
// coldwarm.c runs it with its own S3 server and model; alone it needs them.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const srcDir = process.env.RINGCACHE_SOURCE_DIR || path.resolve(here, '../..');
const buildDir = process.env.RINGCACHE_BUILD_DIR || path.join(srcDir, 'build/release');
const ringcache = path.join(buildDir, 'ingest/cli/ringcache');
const argv = process.argv.slice(2);
const opt = (n, d) => (argv.includes(n) ? argv[argv.indexOf(n) + 1] : d);
if (argv.includes('--help') || !opt('--s3') || !opt('--dir')) {
  console.log('coldwarm_table --rows N --s3 URL --s3-admin PORT --s3-direct URL --bucket B --dir DIR --md FILE\n'
    + '               [--latency-us U (200)] [--bandwidth-mib X (100)] [--threads T (2)] [--scattered K (7)]');
  process.exit(argv.includes('--help') ? 0 : 2);
}
const rows = Number(opt('--rows', 200000)), s3 = opt('--s3'), admin = Number(opt('--s3-admin'));
const direct = opt('--s3-direct'), bucket = opt('--bucket', 'ringcache-bench'), dir = opt('--dir');
const mdPath = opt('--md'), latency = Number(opt('--latency-us', 200)), bw = Number(opt('--bandwidth-mib', 100));
const threads = Number(opt('--threads', 2)), nScattered = Number(opt('--scattered', 7));
const log = (m) => process.stderr.write(`coldwarm-table: ${m}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
fs.mkdirSync(dir, { recursive: true });

const children = new Set();
process.on('exit', () => { for (const c of children) try { c.kill('SIGKILL'); } catch { /* gone */ } });
const env = { ...process.env, AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_REGION: 'us-east-1' };
let seq = 0;
function start(name, cmd, args) {
  const lf = path.join(dir, `${name}-${seq++}.log`);
  const fd = fs.openSync(lf, 'a');
  const p = spawn(cmd, args, { env, stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  children.add(p);
  p.on('exit', () => children.delete(p));
  return { p, lf };
}
async function portFile(pf, proc, what) {
  for (let i = 0; i < 2000; i++) {
    if (proc.p.exitCode !== null) throw new Error(`${what} exited with ${proc.p.exitCode}: ${fs.readFileSync(proc.lf, 'utf8').slice(-2000)}`);
    try { const t = fs.readFileSync(pf, 'utf8').trim(); if (t) return t.split('\n').map(Number); } catch { /* not yet */ }
    await sleep(10);
  }
  throw new Error(`${what} wrote no port to ${pf}`);
}
async function stop(proc) {
  if (proc.p.exitCode !== null) return;
  const done = new Promise((r) => proc.p.on('exit', r));
  proc.p.kill('SIGTERM');
  const t = setTimeout(() => proc.p.kill('SIGKILL'), 20000);
  await done;
  clearTimeout(t);
}

// the S3 model's counters
const model = async (q) => { const r = await fetch(`http://127.0.0.1:${admin}${q}`); const t = await r.text(); if (!r.ok) throw new Error(`s3model ${q}: ${t}`); return t; };
const resetS3 = () => model('/reset');
// GETs in all, and those of the parts' objects (the rest: the table's log, the listing)
const getsS3 = async () => {
  const c = JSON.parse(await model('/counts'));
  let data = 0;
  for (const [k, v] of Object.entries(c.by_object || {})) if (k.includes('/data/')) data += v.GET || 0;
  return { all: c.by_method.GET || 0, data };
};

// three cache nodes, fresh each time
let gen = 0;
async function cluster() {
  gen++;
  const nodes = [];
  for (let i = 0; i < 3; i++) {
    const d = path.join(dir, `node${i}-g${gen}`);
    fs.mkdirSync(d, { recursive: true });
    const pf = path.join(d, 'port');
    const id = `ringcache-${i}`;
    const proc = start(`node${i}-g${gen}`, path.join(buildDir, 'cached/ringcached'), ['--node-id', id, '--listen', '127.0.0.1',
      '--port', '0', '--port-file', pf, '--admin-listen', '127.0.0.1', '--admin-port', '0', '--data-dir', d,
      '--ssd-capacity', `${Math.max(512, Math.ceil(rows / 1e6) * 512)}MiB`, '--ram-capacity', '256MiB', '--threads', '2',
      '--no-sync', '--s3-endpoint', s3, '--log-level', 'warn']);
    const [port] = await portFile(pf, proc, `ringcached ${id}`);
    nodes.push({ id, port, proc });
  }
  return nodes;
}
// a netproxy in front of the three nodes for one compute node: its --cache string
let np = 0;
async function proxy(nodes) {
  const pf = path.join(dir, `proxy${np++}.ports`);
  const args = [];
  for (const n of nodes) args.push('--target', `127.0.0.1:${n.port}`);
  const proc = start('proxy', path.join(buildDir, 'bench/netproxy/netproxy'),
    [...args, '--port-file', pf, '--latency-us', String(latency), '--bandwidth-mib', String(bw)]);
  let ports = await portFile(pf, proc, 'netproxy');
  for (let i = 0; i < 200 && ports.length < nodes.length; i++) { await sleep(10); ports = fs.readFileSync(pf, 'utf8').trim().split('\n').map(Number); }
  return { proc, members: nodes.map((n, i) => `${n.id}=127.0.0.1:${ports[i]}`).join(',') };
}
let sn = 0;
async function server(members, extra = []) {
  const pf = path.join(dir, `server${sn}.port`);
  const args = ['server', '--port', '0', '--port-file', pf, '--s3-endpoint', s3, '--warehouse', `s3://${bucket}/wh/`,
    '--page-cache', '1GiB', '--max-threads', String(threads), '--no-background-merges', '--log-level', 'warn',
    '--no-query-log-flush', ...extra]; // the S3 GETs counted are the queries' only
  if (members) args.push('--cache', members);
  const proc = start(`server${sn++}`, ringcache, args);
  const [port] = await portFile(pf, proc, 'ringcache server');
  const url = `http://127.0.0.1:${port}`;
  const q = async (sql) => {
    const r = await fetch(`${url}/?default_format=TSV`, { method: 'POST', body: sql });
    const t = await r.text();
    if (r.status !== 200) throw new Error(`ringcache server answered ${r.status} to ${sql.slice(0, 120)}: ${t.slice(0, 500)}`);
    return t;
  };
  const cpu = () => {
    try { const f = fs.readFileSync(`/proc/${proc.p.pid}/stat`, 'utf8').split(') ')[1].split(' '); return (Number(f[11]) + Number(f[12])) / 100; } catch { return 0; }
  };
  return { proc, q, cpu };
}
const timed = async (fn) => { const t = process.hrtime.bigint(); const out = await fn(); return [Number(process.hrtime.bigint() - t) / 1e9, out]; };

// the data: Parquet files with DuckDB, put straight into S3 (not through the model)
const data = path.join(dir, 'reviews');
log(`writing ${rows} rows of reviews (DuckDB)`);
const g = spawnSync(process.execPath, [path.join(here, 'reviews_gen.mjs'), data, String(rows), '4'], { stdio: ['ignore', 'inherit', 'inherit'] });
if (g.status !== 0) { log(`reviews_gen.mjs failed (${g.status}): no table workload`); process.exit(g.status === 77 ? 77 : 1); }
let parquetBytes = 0;
for (const f of fs.readdirSync(data).filter((x) => x.endsWith('.parquet')).sort()) {
  const body = fs.readFileSync(path.join(data, f));
  parquetBytes += body.length;
  const r = await fetch(`${direct}/${bucket}/reviews/${f}`, { method: 'PUT', body });
  if (!r.ok) throw new Error(`PUT reviews/${f}: ${r.status}`);
}

// The post's table holds about 21k rows a date (150M rows, 20 years) in granules of 8192 rows:
// a date spans 2-3 granules and 20 dates read about 0.3% of it. At our scales a date has far
// fewer rows, so the granule shrinks with them (a power of two near rows a date / 2.6, 1024 to
// 8192): at 8192 20 dates touch a third of a 500k-row table, at 1024 about 4%. Below 1024
// a granule of 15 columns is 15 small ranges, and S3 directly pays 30 ms for each.
const granularity = Math.min(8192, Math.max(1024, 2 ** Math.floor(Math.log2(rows / 7500 / 2.6))));
const TABLE = `CREATE TABLE amazon_reviews (review_date Date, marketplace String, customer_id UInt64,
  review_id String, product_id String, product_parent UInt64, product_title String, product_category String,
  star_rating UInt8, helpful_votes UInt32, total_votes UInt32, vine Bool, verified_purchase Bool,
  review_headline String, review_body String) ENGINE = MergeTree ORDER BY (review_date, product_category)
  SETTINGS index_granularity = ${granularity}`;
const scan = 'SELECT count() FROM amazon_reviews WHERE NOT ignore(*)';
// 20 dates in the generator's range, scattered, a different set each run
let seed = 12345;
const rnd = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
const dateSets = Array.from({ length: nScattered }, () => Array.from({ length: 20 }, () => {
  const d = new Date(Date.UTC(1995, 5, 24) + Math.floor(rnd() * 7500) * 86400000);
  return `'${d.toISOString().slice(0, 10)}'`;
}));
const scattered = (k, from = 'amazon_reviews', what = '*', fmt = 'Null') => `SELECT ${what} FROM ${from} WHERE review_date IN [${dateSets[k].join(', ')}] FORMAT ${fmt}`;

// load: INSERT through a server on three nodes (write-through), then stop them
log('loading the table: INSERT INTO amazon_reviews SELECT * FROM s3(...) through the cache');
let nodes = await cluster();
let px = await proxy(nodes);
let s = await server(px.members);
await s.q(TABLE);
await resetS3();
const [loadS] = await timed(() => s.q(`INSERT INTO amazon_reviews SELECT * FROM s3('s3://${bucket}/reviews/*.parquet') SETTINGS max_insert_threads = ${threads}`));
const loadGets = await getsS3();
const parts = Number((await s.q("SELECT count() FROM system.parts WHERE table = 'amazon_reviews' AND active")).trim());
const nRows = Number((await s.q('SELECT count() FROM amazon_reviews')).trim());
if (nRows !== rows) throw new Error(`the table holds ${nRows} rows, not ${rows}`);
// what the local files answer: the reference of every set-up
const localScan = `SELECT count() FROM file('${data}/*.parquet') WHERE NOT ignore(*)`;
const want = await Promise.all(dateSets.map((_, k) => s.q(scattered(k, `file('${data}/*.parquet')`, 'count()', 'TSV'))));
for (let k = 0; k < nScattered; k++) {
  const got = await s.q(scattered(k, 'amazon_reviews', 'count()', 'TSV'));
  if (got !== want[k]) throw new Error(`(b) with dates set ${k}: the table counts ${got.trim()} rows, the files ${want[k].trim()}`);
}
await stop(s.proc); await stop(px.proc);
for (const n of nodes) await stop(n.proc);
// the table's objects: blocks of 1 MiB (the cache's unit)
let tableBytes = 0, tableBlocks = 0, objects = 0;
{
  let token = '';
  for (;;) {
    const r = await fetch(`${direct}/${bucket}?list-type=2&prefix=wh/${token ? `&continuation-token=${encodeURIComponent(token)}` : ''}`);
    const x = await r.text();
    for (const m of x.matchAll(/<Key>([^<]+)<\/Key>[^]*?<Size>(\d+)<\/Size>/g)) {
      const b = Number(m[2]);
      tableBytes += b;
      objects++;
      if (m[1].includes('/data/')) tableBlocks += Math.max(1, Math.ceil(b / 1048576));
    }
    const t = x.match(/<NextContinuationToken>([^<]+)</);
    if (!t) break;
    token = t[1];
  }
}
log(`loaded ${rows} rows in ${loadS.toFixed(2)} s: ${parts} parts, ${objects} objects, ${(tableBytes / 1048576).toFixed(1)} MiB (${tableBlocks} blocks)`);

const rowsOut = [];
const checkScan = (out, where) => { if (Number(out.trim()) !== rows) throw new Error(`(a) in ${where} counted ${out.trim()}, not ${rows}`); };
const pct = (a, p) => { const x = [...a].sort((u, v) => u - v); return x[Math.min(x.length - 1, Math.floor(x.length * p))]; };
// (b) --scattered times, the page cache dropped before each when `drop`
async function scatteredRuns(srv, drop, from = 'amazon_reviews', n = nScattered) {
  const t = [];
  await resetS3();
  for (let k = 0; k < n; k++) {
    if (drop) await srv.q('SYSTEM DROP PAGE CACHE');
    t.push((await timed(() => srv.q(scattered(k, from))))[0] * 1000);
  }
  return { p50: pct(t, 0.5), p99: pct(t, 0.99), gets: await getsS3() };
}
async function scanRun(srv, where, drop) {
  if (drop) await srv.q('SYSTEM DROP PAGE CACHE');
  await resetS3();
  const c0 = srv.cpu();
  const [sec, out] = await timed(() => srv.q(scan));
  checkScan(out, where);
  return { s: sec, gets: await getsS3(), cpu: srv.cpu() - c0 };
}
const mibs = (sec) => (tableBytes / 1048576 / sec);
// a warm run: the median of three (one run on a loaded 2-core machine can be a stall)
async function hotRuns(srv, where) {
  const r = [await scanRun(srv, where, false), await scanRun(srv, where, false), await scanRun(srv, where, false)];
  return r.sort((x, y) => x.s - y.s)[1];
}

// 1: S3 directly, and the local files
log('1 S3 directly');
s = await server(null);
const s3cold = await scanRun(s, 'S3 directly', true);
const s3hot = await hotRuns(s, 'S3 directly');
const s3sc = await scatteredRuns(s, true, 'amazon_reviews', Math.min(3, nScattered)); // seconds each, 30 ms a range
await s.q(localScan); // the OS page cache has the files: written just now; once more to be sure
const localRuns = [];
for (let i = 0; i < 3; i++) {
  const [sec, out] = await timed(() => s.q(localScan));
  checkScan(out, 'the local files');
  localRuns.push(sec);
}
const localS = localRuns.sort((x, y) => x - y)[1];
const localSc = await scatteredRuns(s, false, `file('${data}/*.parquet')`);
localSc.gets = { all: 0, data: 0 };
rowsOut.push({ name: 'local Parquet files (peer, OS page cache warm)', hot: { s: localS, gets: { all: 0, data: 0 } }, sc: localSc });
rowsOut.push({ name: '1 S3 directly (no cache nodes)', cold: s3cold, hot: s3hot, sc: s3sc });
await stop(s.proc);

// 2 + 3 + 4: three cold nodes
log('2-4 distributed cache: first load, warm nodes, a second server');
nodes = await cluster();
px = await proxy(nodes);
s = await server(px.members);
const first = await scanRun(s, 'set-up 2', true);
const warmNodes = await scanRun(s, 'set-up 3', true);
const sc3 = await scatteredRuns(s, true);
rowsOut.push({ name: '2 cache nodes cold (first load)', cold: first });
rowsOut.push({ name: '3 cache nodes warm, page cache dropped', cold: warmNodes, sc: sc3 });
const px2 = await proxy(nodes);
const s2 = await server(px2.members);
const second = await scanRun(s2, 'set-up 4', false); // a new process: its page cache is empty
const secondHot = await hotRuns(s2, 'set-up 4');
const sc4 = await scatteredRuns(s2, true);
const sc4hot = await scatteredRuns(s2, false);
rowsOut.push({ name: '4 a second server, warm nodes; then again (page cache warm)', cold: second, hot: secondHot, sc: sc4, schot: sc4hot });
await stop(s.proc); await stop(s2.proc); await stop(px.proc); await stop(px2.proc);
for (const n of nodes) await stop(n.proc);

// 5: six servers at once, cold nodes then warm
log('5 six servers at once, cold nodes then warm');
nodes = await cluster();
const six = [];
for (let i = 0; i < 6; i++) { const p = await proxy(nodes); six.push({ px: p, srv: await server(p.members) }); }
async function sixAt() {
  await resetS3();
  const c0 = six.reduce((a, x) => a + x.srv.cpu(), 0);
  const [sec, outs] = await timed(() => Promise.all(six.map((x) => x.srv.q(scan))));
  outs.forEach((o) => checkScan(o, 'set-up 5'));
  return { s: sec, gets: await getsS3(), cpu: six.reduce((a, x) => a + x.srv.cpu(), 0) - c0 };
}
const sixCold = await sixAt();
for (const x of six) await x.srv.q('SYSTEM DROP PAGE CACHE');
const sixWarm = await sixAt();
rowsOut.push({ name: '5 six servers at once (aggregate)', cold: sixCold, hot: sixWarm, six: true });
for (const x of six) { await stop(x.srv.proc); await stop(x.px.proc); }
for (const n of nodes) await stop(n.proc);

// the table
const f2 = (x) => x.toFixed(2);
const gets = (g) => `${g.all} GETs (${g.data} of parts)`;
const cell = (r, six) => (r ? `${f2(r.s)} s, ${mibs(r.s / (six ? 6 : 1)).toFixed(0)} MiB/s${six ? ' aggregate' : ''}, ${r.gets.all === undefined ? '0 GETs' : gets(r.gets)}` : '-');
const scell = (sc) => (sc ? `${f2(sc.p50)} / ${f2(sc.p99)} ms, ${gets(sc.gets)} in all` : '-');
let md = `\nThe distributed-cache post's table: ${rows} Amazon-reviews-shaped rows (${(parquetBytes / 1048576).toFixed(1)} MiB of zstd Parquet) `
  + `loaded by \`INSERT INTO amazon_reviews SELECT * FROM s3(...)\` through a \`ringcache server\` on three cache nodes in ${f2(loadS)} s `
  + `(${loadGets.all} S3 GETs), a MergeTree table ORDER BY (review_date, product_category) (index_granularity ${granularity}, smaller than the post's 8192 so that 20 dates read a small share of it) of ${parts} parts, ${objects} objects, `
  + `${(tableBytes / 1048576).toFixed(1)} MiB (the parts' objects ${tableBlocks} blocks of 1 MiB). Each compute node is a \`ringcache server\` (max_threads ${threads}) `
  + `reaching the nodes through its own link (${latency} us each way, ${bw} MiB/s); (a) \`SELECT count() FROM amazon_reviews WHERE NOT ignore(*)\`, `
  + `(b) \`SELECT * FROM amazon_reviews WHERE review_date IN [20 dates] FORMAT Null\`, ${nScattered} runs of other dates (S3 directly ${Math.min(3, nScattered)}), `
  + 'the page cache dropped before each but in the last column; S3 GETs counted per run (of them, those of the parts\' '
  + 'objects; the others read the table\'s log and list the warehouse, on every query):\n\n'
  + '| set-up | (a) first run | (a) again (median of 3) | (b) p50 / p99 | (b) page cache warm |\n|---|---|---|---|---|\n';
for (const r of rowsOut) md += `| ${r.name} | ${cell(r.cold, r.six)} | ${cell(r.hot, r.six)} | ${scell(r.sc)} | ${scell(r.schot)} |\n`;
const summary = `coldwarm-table: second_node_vs_first=${f2(first.s / second.s)} hot_server_vs_local=${f2(localS / secondHot.s)} `
  + `scattered_p50_ms_second_node=${f2(sc4.p50)} six_servers_s3_gets_per_block=${f2(sixCold.gets.data / tableBlocks)}`;
md += `\n${summary}\n`;
if (mdPath) fs.writeFileSync(mdPath, md);
process.stdout.write(md);
process.exit(0);
