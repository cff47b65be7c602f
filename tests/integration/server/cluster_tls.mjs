// SPDX-License-Identifier: Apache-2.0
//
// test_server_cluster_tls: s3Cluster between `ringcache server`s that serve
// HTTPS (--tls-cert/--tls-key). Certificates are made at test time with the
// openssl CLI: one self-signed certificate for 127.0.0.1 that is its own CA
// (every TLS server uses it; --cluster-tls-ca names it) and an unrelated one.
// The real S3 server holds a few CSV files. Checked: a query over a TLS
// cluster answers as s3() on one server (the workers' query_log shows its
// units, so they ran there); a member on plain HTTP fails the query with an
// error naming it and saying HTTPS; a member whose certificate the CA did
// not sign fails naming it and --cluster-tls-ca; --cluster-tls-ca without
// --tls-cert is refused at start. Exits 77 without openssl, node packages
// or the binary.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { check, failed, ringcache, skip, startS3, startServer, tempDir } from './srvutil.mjs';

const tmp = tempDir('test_server_cluster_tls');
if (!fs.existsSync(ringcache)) skip(`${ringcache} is not built`);
function makeCert(name) {
  const cert = path.join(tmp, `${name}.crt`), key = path.join(tmp, `${name}.key`);
  const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256',
    '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1',
    '-addext', 'subjectAltName=IP:127.0.0.1', '-addext', 'basicConstraints=critical,CA:TRUE'],
  { stdio: ['ignore', 'ignore', 'pipe'] });
  if (r.error) skip(`openssl is not installed: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`openssl req failed: ${r.stderr}`);
  return { cert, key };
}
const good = makeCert('cluster'), other = makeCert('other');

const s3 = await startS3();
const bucket = 'ringcache-test';
let want = 0;
for (let f = 0; f < 6; f++) {
  let body = 'id,grp,v\n';
  for (let i = 0; i < 500; i++) { const id = f * 500 + i; body += `${id},g${id % 7},${id * 3}\n`; want += id * 3; }
  const r = await fetch(`${s3.endpoint}/${bucket}/tls/part${f}.csv`, { method: 'PUT', body });
  if (!r.ok) throw new Error(`PUT part${f}.csv: ${r.status}`);
}

const secret = 'tls-cluster-secret';
const common = ['--s3-endpoint', s3.endpoint, '--cluster-secret', secret, '--max-threads', '1'];
const tlsArgs = (c) => ['--tls-cert', c.cert, '--tls-key', c.key];
const w0 = await startServer([...common, ...tlsArgs(good)], {}, 'w0');
const w1 = await startServer([...common, ...tlsArgs(good)], {}, 'w1');
const plain = await startServer(common, {}, 'plain');
const wrong = await startServer([...common, ...tlsArgs(other)], {}, 'wrong');
const m = (w) => `127.0.0.1:${w.port}`;
const init = await startServer([...common, ...tlsArgs(good), '--cluster-tls-ca', good.cert, '--cluster',
  `ok=${m(w0)},${m(w1)};plain=${m(w0)},${m(plain)};wrong=${m(w0)},${m(wrong)}`], {}, 'initiator');

const ca = fs.readFileSync(good.cert), caOther = fs.readFileSync(other.cert);
function q(srv, sql, c = ca) {
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port: srv.port, path: '/?default_format=TSV', method: 'POST', ca: c },
      (res) => { let t = ''; res.on('data', (d) => { t += d; }); res.on('end', () => resolve({ status: res.statusCode, text: t })); });
    req.on('error', reject);
    req.end(sql);
  });
}
async function qPlain(srv, sql) {
  const r = await fetch(`http://127.0.0.1:${srv.port}/?default_format=TSV`, { method: 'POST', body: sql });
  return { status: r.status, text: await r.text() };
}

const src = (fn) => `${fn}'s3://${bucket}/tls/*.csv')`;
const sql = (from) => `SELECT grp, count(), sum(v) FROM ${from} GROUP BY grp ORDER BY grp`;
const one = await q(init, sql(src('s3(')));
check(one.status === 200 && one.text.split('\n').length === 8, `s3() on the TLS initiator: ${one.status} ${one.text.slice(0, 100)}`);
const dist = await q(init, sql(src("s3Cluster('ok', ")));
check(dist.status === 200 && dist.text === one.text, `s3Cluster over HTTPS equals s3(): ${dist.status} ${dist.text.slice(0, 200)}`);
const tot = await q(init, `SELECT sum(v) FROM ${src("s3Cluster('ok', ")}`);
check(tot.text === `${want}\n`, `the sum over the TLS cluster: ${tot.text.trim()} = ${want}`);
let units = 0;
for (const w of [w0, w1]) {
  units += Number((await q(w, "SELECT count() FROM system.query_log WHERE type = 'QueryFinish' AND is_initial_query = 0")).text);
}
check(units >= 6, `the workers ran the units over HTTPS (${units} in their query_log)`);

const pl = await q(init, sql(src("s3Cluster('plain', ")));
check(pl.status !== 200 && pl.text.includes(m(plain)) && pl.text.includes('HTTPS') && !pl.text.includes(m(w0) + ':'),
  `a member on plain HTTP fails the query naming it: ${pl.text.slice(0, 400)}`);
const wr = await q(init, sql(src("s3Cluster('wrong', ")));
check(wr.status !== 200 && wr.text.includes(m(wrong)) && wr.text.includes('--cluster-tls-ca'),
  `a member with a certificate of another CA fails the query naming it: ${wr.text.slice(0, 400)}`);
// the plain worker itself still answers plain HTTP, the odd one out is only refused by the TLS cluster
check((await qPlain(plain, 'SELECT 1')).text === '1\n', 'the plain-HTTP server answers on its own');
check((await q(wrong, 'SELECT 1', caOther)).text === '1\n', 'the other-CA server answers its own clients');

// --cluster-tls-ca without HTTPS of its own is refused at start
{
  const r = spawnSync(ringcache, ['server', '--port', '0', '--cluster-tls-ca', good.cert, '--cluster', `x=${m(w0)}`,
    '--cluster-secret', secret], { encoding: 'utf8', timeout: 20000 });
  check(r.status !== 0 && r.stderr.includes('--tls-cert'), `--cluster-tls-ca without --tls-cert is refused: ${r.stderr.trim().slice(0, 300)}`);
}

for (const w of [init, w0, w1, plain, wrong]) check((await w.stop()) === 0, 'a server exits 0 on SIGTERM');
process.exit(failed() ? 1 : 0);
