// SPDX-License-Identifier: Apache-2.0
//
// cluster_bench.mjs: s3Cluster over three `ringcache server` processes
// against one, in one run, in the network-bound case: every server reaches
// S3 (s3rver) through its own netproxy (bench/netproxy: a one-way latency and
// a bandwidth cap per server), so three servers have three links.
// bench/engine/bench_gen.mjs writes the SO-posts Parquet files (--rows,
// default 2M). Then, interleaved, --runs times:
//
//   single   the seed query (top 5 OwnerDisplayName by posts) with s3() on
//            one server, after SYSTEM DROP PAGE CACHE (cold), then again (warm)
//   cluster  the same with s3Cluster('bench', ...) on the initiator over the
//            three, page caches dropped on all (cold), then again (warm)
//
//   insert   INSERT INTO a MergeTree table (the warehouse on the same S3,
//            through each server's link) SELECT FROM s3Cluster on the
//            initiator: parallel_distributed_insert_select = 0 (the
//            initiator reads and inserts every row) against = 2 (each server
//            inserts its units), the table truncated before each; both
//            checked to load every row
//
// "warm" is the servers' page cache; the cache nodes' warm case is not part
// of this run. CPU seconds are the servers' (utime + stime from /proc)
// during each kind of run. Then --kills runs of the seed query with one
// worker SIGKILLed while it runs (restarted on its port after each).
//
// The last line (bench/README.md's convention: a bare name is a speed, above
// 1 we are faster; the ideal speed-up is 3):
//   cluster: select_cold_speedup=<single s / cluster s, cold>
//            select_warm_speedup=<the same, warm>
//            insert_pdis2_speedup=<pdis = 0 s / pdis = 2 s>
//            cpu_per_row_vs_single=<cluster CPU s per row / single's>
//            killed_worker_ok=N/N
// Every process is stopped and the temp folder removed.
//
//   node bench/cluster/cluster_bench.mjs [--rows N] [--runs R] [--latency-us U]
//        [--bandwidth-mib B] [--kills K]
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { buildDir, srcDir, startS3, startServer, tempDir, sleep } from '../../tests/integration/server/srvutil.mjs';

const argv = process.argv.slice(2);
const arg = (n, d) => (argv.includes(n) ? Number(argv[argv.indexOf(n) + 1]) : d);
const rows = arg('--rows', 2000000), runs = arg('--runs', 3), kills = arg('--kills', 5);
const latency = arg('--latency-us', 2000), bw = arg('--bandwidth-mib', 100);
const tmp = tempDir('cluster_bench');
const gen = spawnSync(process.execPath, [path.join(srcDir, 'bench/engine/bench_gen.mjs'), tmp, String(rows), '0'],
  { stdio: ['ignore', 'inherit', 'inherit'] });
if (gen.status !== 0) { console.error(`cluster_bench: bench_gen.mjs failed (${gen.status})`); process.exit(1); }
const s3 = await startS3();
const bucket = 'ringcache-test';
for (const f of fs.readdirSync(path.join(tmp, 'data'))) {
  const r = await fetch(`${s3.endpoint}/${bucket}/bench/${f}`, { method: 'PUT', body: fs.readFileSync(path.join(tmp, 'data', f)) });
  if (!r.ok) throw new Error(`PUT ${f}: ${r.status}`);
}

const children = [];
process.on('exit', () => { for (const c of children) try { c.kill('SIGKILL'); } catch { /* gone */ } });
async function proxy(i) {
  const pf = path.join(tmp, `np${i}.port`);
  const p = spawn(path.join(buildDir, 'bench/netproxy/netproxy'),
    ['--target', `127.0.0.1:${s3.port}`, '--port-file', pf, '--latency-us', String(latency), '--bandwidth-mib', String(bw)],
    { stdio: 'ignore' });
  children.push(p);
  for (let k = 0; k < 400 && !(fs.existsSync(pf) && fs.readFileSync(pf, 'utf8').trim()); k++) await sleep(10);
  return Number(fs.readFileSync(pf, 'utf8').trim().split('\n')[0]);
}
const freePort = () => new Promise((r) => { const s = net.createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => r(p)); }); });

const secret = 'bench-secret';
const ports = [await freePort(), await freePort(), await freePort()];
const members = ports.map((p) => `127.0.0.1:${p}`).join(',');
const np = [await proxy(0), await proxy(1), await proxy(2)];
const args = (i) => ['--port', String(ports[i]), '--s3-endpoint', `http://127.0.0.1:${np[i]}`, '--cluster-secret', secret,
  '--cluster', `bench=${members}`, '--max-threads', '2', '--warehouse', `s3://${bucket}/wh/`];
const srv = [];
for (let i = 0; i < 3; i++) srv.push(await startServer(args(i), {}, `server${i}`));

const cpu = () => srv.reduce((a, s) => {
  try {
    const f = fs.readFileSync(`/proc/${s.proc.pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return a + (Number(f[11]) + Number(f[12])) / 100;
  } catch { return a; }
}, 0);
async function q(s, sql) {
  const r = await fetch(`${s.url}/?default_format=TSV`, { method: 'POST', body: sql });
  const t = await r.text();
  if (r.status !== 200) throw new Error(`${r.status}: ${t.slice(0, 300)}`);
  return t;
}
const seed = (from) => `SELECT OwnerDisplayName, count() AS num_posts FROM ${from} WHERE OwnerDisplayName NOT IN ('', 'anon') GROUP BY OwnerDisplayName ORDER BY num_posts DESC, OwnerDisplayName LIMIT 5 SETTINGS max_threads = 2`;
const one = seed(`s3('s3://${bucket}/bench/*.parquet')`), dist = seed(`s3Cluster('bench', 's3://${bucket}/bench/*.parquet')`);
async function timed(s, sql) { const t0 = process.hrtime.bigint(); const out = await q(s, sql); return [Number(process.hrtime.bigint() - t0) / 1e9, out]; }
const dropAll = async () => { for (const s of srv) await q(s, 'SYSTEM DROP PAGE CACHE'); };

const m = { sc: [], sw: [], cc: [], cw: [], i0: [], i2: [] };
let cpuSingle = 0, cpuCluster = 0, want = null;
for (let r = 0; r < runs; r++) {
  await dropAll();
  let c0 = cpu();
  const [a, outA] = await timed(srv[0], one);
  const [b] = await timed(srv[0], one);
  cpuSingle += cpu() - c0;
  await dropAll();
  c0 = cpu();
  const [c, outC] = await timed(srv[0], dist);
  const [d] = await timed(srv[0], dist);
  cpuCluster += cpu() - c0;
  if (outA !== outC) { console.error(`cluster_bench: the answers differ:\n${outA}\n${outC}`); process.exit(1); }
  want = outA;
  m.sc.push(a); m.sw.push(b); m.cc.push(c); m.cw.push(d);
  console.error(`run ${r}: single cold ${a.toFixed(3)} s warm ${b.toFixed(3)} s; cluster cold ${c.toFixed(3)} s warm ${d.toFixed(3)} s`);
}
const med = (x) => [...x].sort((p, q2) => p - q2)[Math.floor(x.length / 2)];

await q(srv[0], `CREATE TABLE ins (Id Int64, PostTypeId Int32, Score Int32, ViewCount Nullable(Int32),
  OwnerDisplayName String, Title String) ENGINE = MergeTree ORDER BY Id`);
// each run its own insert_deduplication_token: the same rows inserted again
// after the TRUNCATE are otherwise dropped as duplicates whenever the
// blocks come out as in an earlier run (their ids are their hashes)
const ins = (pdis, r) => `INSERT INTO ins SELECT Id, PostTypeId, Score, ViewCount, OwnerDisplayName, Title
  FROM s3Cluster('bench', 's3://${bucket}/bench/*.parquet') SETTINGS parallel_distributed_insert_select = ${pdis}, max_insert_threads = 2,
  insert_deduplication_token = 'bench-${r}-${pdis}'`;
for (let r = 0; r < runs; r++) {
  for (const pdis of [0, 2]) {
    await q(srv[0], 'TRUNCATE TABLE ins');
    await dropAll();
    const [t] = await timed(srv[0], ins(pdis, r));
    const n = Number((await q(srv[0], 'SELECT count() FROM ins')).trim());
    if (n !== rows) { console.error(`cluster_bench: pdis = ${pdis} loaded ${n} rows of ${rows}`); process.exit(1); }
    (pdis ? m.i2 : m.i0).push(t);
    console.error(`run ${r}: insert pdis = ${pdis} ${t.toFixed(3)} s`);
  }
}

let ok = 0;
for (let k = 0; k < kills; k++) {
  await dropAll();
  const p = q(srv[0], `${dist.replace('SETTINGS max_threads = 2', 'SETTINGS max_threads = 2, skip_unavailable_shards = 1')}`);
  await sleep(100 + 50 * k);
  srv[2].proc.kill('SIGKILL');
  try { ok += (await p) === want; } catch (e) { console.error(`kill ${k}: ${e.message}`); }
  srv[2] = await startServer(args(2), {}, `server2-${k}`);
}
const f = (x) => x.toFixed(2);
console.log('| run | single s (median) | 3 servers s (median) | speed-up |\n|---|---|---|---|');
console.log(`| seed, cold | ${med(m.sc).toFixed(3)} | ${med(m.cc).toFixed(3)} | ${f(med(m.sc) / med(m.cc))} |`);
console.log(`| seed, warm page cache | ${med(m.sw).toFixed(3)} | ${med(m.cw).toFixed(3)} | ${f(med(m.sw) / med(m.cw))} |`);
console.log(`| INSERT ... SELECT FROM s3Cluster, pdis = 0 vs 2 | ${med(m.i0).toFixed(3)} | ${med(m.i2).toFixed(3)} | ${f(med(m.i0) / med(m.i2))} |`);
console.log(`(rows ${rows}, runs ${runs}, each server's link ${latency} us one way, ${bw} MiB/s; CPU s single ${cpuSingle.toFixed(2)}, cluster ${cpuCluster.toFixed(2)})`);
console.log(`cluster: select_cold_speedup=${f(med(m.sc) / med(m.cc))} select_warm_speedup=${f(med(m.sw) / med(m.cw))} insert_pdis2_speedup=${f(med(m.i0) / med(m.i2))} cpu_per_row_vs_single=${f(cpuCluster / cpuSingle)} killed_worker_ok=${ok}/${kills}`);
for (const s of srv) await s.stop();
process.exit(0);
