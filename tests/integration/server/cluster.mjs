// SPDX-License-Identifier: Apache-2.0
//
// test_server_cluster: s3Cluster over real `ringcache server` processes. The
// real S3 server (s3rver) holds gen.mjs's datasets; three workers and an
// initiator (--cluster test=worker,worker,worker, all with one
// --cluster-secret) run on loopback with --port 0 --port-file. Every
// DuckDB-oracle query rewritten to s3Cluster('test', ...) answers as s3()
// on one server; system.clusters lists the members; a unit without the
// secret is refused; a worker's query_log marks its units not initial,
// naming the initiator's query id, and the initiator's row has the total
// read and each member's share (cluster_shares); progress headers on the
// initiator count a unit in flight (a relay in front of a worker holds its
// answer back); a worker down at the start fails the query with its
// name unless skip_unavailable_shards = 1; a worker killed while a query
// runs (scripted, 10 times, restarted on its port each time) still gives
// the right answer. Exits 77 without node packages or the binary.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { check, failed, ringcache, skip, sleep, srcDir, startS3, startServer, tempDir } from './srvutil.mjs';

const tmp = tempDir('test_server_cluster');
const data = path.join(tmp, 'data');
const gen = spawnSync(process.execPath, [path.join(srcDir, 'tests/integration/engine/gen.mjs'), data],
  { stdio: ['ignore', 'inherit', 'inherit'] });
if (gen.status === 77) skip('gen.mjs needs @duckdb/node-api');
if (gen.status !== 0) throw new Error(`gen.mjs failed: ${gen.status}`);
if (!fs.existsSync(ringcache)) skip(`${ringcache} is not built`);

const s3 = await startS3();
const bucket = 'ringcache-test';
// every file of the dataset into the bucket (s3rver takes unsigned PUTs)
async function upload(dir, prefix) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) { await upload(p, `${prefix}${e.name}/`); continue; }
    const r = await fetch(`${s3.endpoint}/${bucket}/${prefix}${e.name}`, { method: 'PUT', body: fs.readFileSync(p) });
    if (!r.ok) throw new Error(`PUT ${prefix}${e.name}: ${r.status}`);
  }
}
await upload(data, '');

const secret = 'test-cluster-secret';
const common = ['--s3-endpoint', s3.endpoint, '--cluster-secret', secret, '--max-threads', '1'];
const workers = [];
for (let i = 0; i < 3; i++) workers.push(await startServer(common, {}, `worker${i}`));
const members = workers.map((w) => `127.0.0.1:${w.port}`);
// a relay in front of worker 0: it passes a unit on, then answers with the
// worker's read_rows in an early X-ClickHouse-Progress header and holds the
// body back 400 ms, so the initiator's progress while the unit is in flight
// can be seen (cluster 'relay')
let relayAsked = 0;
const relay = http.createServer(async (req, res) => {
  let body = '';
  for await (const d of req) body += d;
  const h = {};
  for (const k of ['x-ringcache-unit', 'x-ringcache-cluster-secret', 'x-ringcache-initial-query-id']) if (req.headers[k]) h[k] = req.headers[k];
  if (req.url.includes('send_progress_in_http_headers=1')) relayAsked++;
  const r = await fetch(`${workers[0].url}${req.url.split('?')[0]}`, { method: req.method, headers: h, body: req.method === 'POST' ? body : undefined });
  const buf = Buffer.from(await r.arrayBuffer());
  const sum = JSON.parse(r.headers.get('x-clickhouse-summary') || '{}');
  if (req.method !== 'POST') { res.writeHead(r.status); res.end(buf); return; }
  res.writeHead(r.status, { 'X-ClickHouse-Progress': JSON.stringify({ read_rows: sum.read_rows || '0', read_bytes: sum.read_bytes || '0' }) });
  res.flushHeaders();
  setTimeout(() => res.end(buf), 400);
});
await new Promise((r) => relay.listen(0, '127.0.0.1', r));
const relayMember = `127.0.0.1:${relay.address().port}`;
const init = await startServer([...common, '--cluster', `test=${members.join(',')};relay=${relayMember}`], {}, 'initiator');

async function q(srv, sql) {
  const r = await fetch(`${srv.url}/?default_format=TSV`, { method: 'POST', body: sql });
  return { status: r.status, text: await r.text() };
}
const sorted = (t) => t.split('\n').filter((l) => l !== '').sort().join('\n');

// every query: s3Cluster on the initiator equals s3() on it
const cases = fs.readFileSync(path.join(data, 'cases.tsv'), 'utf8').split('\n').filter(Boolean);
let same = 0;
const rw = (sql, cluster) => sql.split(`file('${data}/`).join(cluster ? `s3Cluster('test', 's3://${bucket}/` : `s3('s3://${bucket}/`);
for (const line of cases) {
  const [name, flags, sql] = line.split('\t');
  const one = await q(init, rw(sql, false));
  const dist = await q(init, rw(sql, true));
  const ok = one.status === 200 && dist.status === 200 &&
    (flags === 'sorted' ? sorted(one.text) === sorted(dist.text) : one.text === dist.text);
  if (!ok) console.log(`FAIL ${name}: s3() ${one.status} ${one.text.slice(0, 300)}\n  s3Cluster ${dist.status} ${dist.text.slice(0, 300)}`);
  same += ok;
}
check(same === cases.length && cases.length >= 35, `${same}/${cases.length} queries through s3Cluster equal s3() on one server`);

const c = await q(init, "SELECT cluster, shard_num, port FROM system.clusters WHERE cluster = 'test' ORDER BY shard_num");
check(c.text === members.map((m, i) => `test\t${i + 1}\t${m.split(':')[1]}`).join('\n') + '\n', `system.clusters lists the members: ${c.text}`);

// a worker's query_log: its units are not initial, and name the initiator's query
{
  const r = await fetch(`${init.url}/?default_format=TSV&query_id=dist-qlog`, { method: 'POST',
    body: `SELECT count() FROM s3Cluster('test', 's3://${bucket}/{posts.parquet,small/*.parquet}')` });
  await r.text();
  let units = 0;
  for (const w of workers) {
    const t = (await q(w, "SELECT count() FROM system.query_log WHERE type = 'QueryFinish' AND " +
      "is_initial_query = 0 AND initial_query_id = 'dist-qlog' AND query_id != 'dist-qlog'")).text;
    units += Number(t);
  }
  const own = (await q(init, "SELECT is_initial_query, initial_query_id FROM system.query_log " +
    "WHERE query_id = 'dist-qlog' AND type = 'QueryFinish'")).text;
  check(r.status === 200 && units > 0 && own === '1\tdist-qlog\n',
    `query_log: the workers' units say is_initial_query = 0 and the initiator's query id (${units} units; initiator: ${JSON.stringify(own)})`);
  // the initiator's row: the total read and each member's share of it
  const [rows, bytes, shares] = (await q(init, "SELECT read_rows, read_bytes, cluster_shares FROM system.query_log " +
    "WHERE query_id = 'dist-qlog' AND type = 'QueryFinish'")).text.trim().split('\t');
  const parts = (shares || '').split(',').map((p) => p.split('='));
  const sumR = parts.reduce((a, p) => a + Number((p[1] || '').split('/')[0]), 0);
  const sumB = parts.reduce((a, p) => a + Number((p[1] || '').split('/')[1]), 0);
  check(parts.map((p) => p[0]).join(',') === members.join(',') && Number(rows) > 0 && sumR === Number(rows) &&
    sumB === Number(bytes), `query_log: the initiator's cluster_shares sum to its read_rows ${rows} / read_bytes ${bytes}: ${shares}`);
}

// progress headers on the initiator count what the units in flight read
{
  const r = await fetch(`${init.url}/?default_format=TSV&send_progress_in_http_headers=1&http_headers_progress_interval_ms=10&query_id=dist-prog`,
    { method: 'POST', body: `SELECT sum(Score) FROM s3Cluster('relay', 's3://${bucket}/posts.parquet')` });
  const text = await r.text();
  const prog = (r.headers.get('x-clickhouse-progress') || '').match(/"read_rows":"\d+"/g) || [];
  const seen = prog.map((p) => Number(p.match(/\d+/)[0]));
  const total = Number((await q(init, "SELECT read_rows FROM system.query_log WHERE query_id = 'dist-prog' AND type = 'QueryFinish'")).text);
  check(r.status === 200 && text.trim() !== '' && relayAsked > 0 && seen.some((v) => v > 0) && seen.every((v) => v <= total),
    `progress headers sum the workers' progress while a unit runs: ${seen.join(' ')} (of ${total}; worker asked for progress: ${relayAsked})`);
}

// a unit without the secret is refused
const seed = `SELECT OwnerDisplayName, count() AS num_posts FROM s3Cluster('test', 's3://${bucket}/{posts.parquet,small/*.parquet}') WHERE OwnerDisplayName NOT IN ('', 'anon') GROUP BY OwnerDisplayName ORDER BY num_posts DESC, OwnerDisplayName LIMIT 5`;
const single = (await q(init, seed.replace(`s3Cluster('test', `, 's3('))).text;
const noauth = await fetch(`${workers[0].url}/`, { method: 'POST', body: seed, headers: { 'X-RingCache-Unit': '0 0 0 posts.parquet' } });
const nat = await noauth.text();
check(noauth.status !== 200 && nat.includes('--cluster-secret'), `a unit without the secret is refused: ${noauth.status} ${nat.slice(0, 200)}`);

// a worker down at the start
const w2port = workers[2].port;
async function restart2() {
  workers[2] = await startServer([...common, '--port', String(w2port)], {}, `worker2-${Date.now()}`);
}
workers[2].proc.kill('SIGKILL');
await sleep(200);
const down = await q(init, seed);
check(down.status !== 200 && down.text.includes(members[2]) && down.text.includes('skip_unavailable_shards'),
  `a down worker fails the query naming it: ${down.text.slice(0, 300)}`);
const skipped = await q(init, `${seed} SETTINGS skip_unavailable_shards = 1`);
check(skipped.status === 200 && skipped.text === single, 'skip_unavailable_shards = 1 answers without it');

// killed while the query runs, ten times (skip_unavailable_shards: a kill
// that lands before the query's start leaves the worker out, one after it
// loses the worker its units; either way the answer is whole)
let right = 0, mid = 0;
for (let i = 0; i < 10; i++) {
  await restart2();
  const p = q(init, `${seed} SETTINGS skip_unavailable_shards = 1`);
  let finished = false;
  p.then(() => { finished = true; });
  await sleep(40 + 25 * i);
  const wasRunning = !finished;
  workers[2].proc.kill('SIGKILL');
  const r = await p;
  mid += wasRunning;
  right += r.status === 200 && r.text === single;
  if (r.status !== 200 || r.text !== single) console.log(`kill ${i}: ${r.status} ${r.text.slice(0, 300)}`);
}
console.log(`killed_worker_ok=${right}/10 (${mid} killed while the query ran)`);
check(right === 10, `a worker killed mid-query: ${right}/10 right answers`);

relay.close();
for (const w of [init, workers[0], workers[1]]) check((await w.stop()) === 0, 'a server exits 0 on SIGTERM');
process.exit(failed() ? 1 : 0);
