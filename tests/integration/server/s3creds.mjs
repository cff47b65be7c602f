// SPDX-License-Identifier: Apache-2.0
//
// test_server_s3creds: the official @clickhouse/client against a real
// `ringcache server` over a real S3 server that knows two key pairs: the
// server's own (S3RVER, from its environment) and a second one given only in
// the query, s3(url, 'KEY', 'SECRET', 'CSVWithNames'). The right key reads
// the rows (the same as through the server's own access); a wrong secret and
// an unknown key each fail with a ClickHouseError whose message says the
// credentials given to s3() were refused. Then system.query_log: the queries
// just run are there with ClickHouse's columns (type, event_time, query_id,
// query, read_rows, read_bytes, written_rows, result_rows, memory_usage,
// query_duration_ms, exception, is_initial_query, initial_query_id), the
// failed one with its exception, and the ring keeps at most --query-log-size
// rows; the secret is '[HIDDEN]' in the logged text, as ClickHouse shows it.
// The server must exit 0 on SIGTERM.
import { createRequire } from 'node:module';
import path from 'node:path';
import { check, finish, nodeModules, skip, startS3, startServer, tempDir } from './srvutil.mjs';

const require = createRequire(import.meta.url);
let ch, sdk;
try {
  ch = require(path.join(nodeModules, '@clickhouse/client'));
  sdk = require(path.join(nodeModules, '@aws-sdk/client-s3'));
} catch (e) {
  skip(`@clickhouse/client or @aws-sdk/client-s3 is not in ${nodeModules} (run npm ci): ${e.message}`);
}
const { createClient, ClickHouseError } = ch;

tempDir('test_server_s3creds');
// s3rver 5 checks SigV4 signatures (3 does not): a wrong secret is refused
const s3 = await startS3(['--version', '5', '--extra-key', 'READER2:reader2-secret']);
const put = new sdk.S3Client({
  endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true,
  credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
});
const lines = ['k,s'];
for (let i = 0; i < 1000; i++) lines.push(`${i},v${i % 7}`);
await put.send(new sdk.PutObjectCommand({ Bucket: 'ringcache-test', Key: 'creds/a.csv', Body: lines.join('\n') + '\n' }));

const srv = await startServer(['--s3-endpoint', s3.endpoint, '--max-threads', '2', '--query-log-size', '16']);
const client = createClient({ url: srv.url, request_timeout: 60000 });
const rows = async (query, query_id) => (await client.query({ query, query_id, format: 'JSONEachRow' })).json();

const url = "'s3://ringcache-test/creds/a.csv'";
const want = [{ n: '1000', sk: String((999 * 1000) / 2) }];
{
  const r = await rows(`SELECT count() AS n, sum(k) AS sk FROM s3(${url}, 'CSVWithNames')`, 'own-access');
  check(JSON.stringify(r) === JSON.stringify(want), `the server's own access reads the rows: ${JSON.stringify(r)}`);
}
{
  const r = await rows(`SELECT count() AS n, sum(k) AS sk FROM s3(${url}, 'READER2', 'reader2-secret', 'CSVWithNames')`,
    'right-key');
  check(JSON.stringify(r) === JSON.stringify(want), `s3() with the second key pair reads the rows: ${JSON.stringify(r)}`);
}
async function refused(key, secret, what, qid) {
  try {
    await rows(`SELECT count() FROM s3(${url}, '${key}', '${secret}', 'CSVWithNames')`, qid);
    check(false, `${what}: expected an error, got rows`);
  } catch (e) {
    const m = String(e.message);
    check(e instanceof ClickHouseError && /given to s3\(\)/.test(m) && /creds\/a\.csv|ringcache-test/.test(m),
      `${what}: a ClickHouseError naming the credentials given to s3() and the object ` +
      `(code=${e.code} type=${e.type}: ${m.slice(0, 300)})`);
    return m;
  }
  return '';
}
await refused('READER2', 'not-the-secret', 'a wrong secret', 'wrong-secret');
await refused('NOBODY', 'reader2-secret', 'an unknown access key', 'wrong-key');
{
  // NOSIGN: unsigned requests (which this S3 server serves)
  const r = await rows(`SELECT count() AS n, sum(k) AS sk FROM s3(${url}, NOSIGN, 'CSVWithNames')`, 'nosign');
  check(JSON.stringify(r) === JSON.stringify(want), `s3(url, NOSIGN) reads unsigned: ${JSON.stringify(r)}`);
}

// system.query_log with ClickHouse's columns
{
  const cols = 'type, event_time, query_id, query, read_rows, read_bytes, written_rows, result_rows, ' +
    'memory_usage, query_duration_ms, exception, is_initial_query, initial_query_id';
  const log = await rows(`SELECT ${cols} FROM system.query_log WHERE query_id IN ('right-key', 'wrong-secret') ` +
    'ORDER BY event_time, type');
  const fin = log.find((r) => r.query_id === 'right-key' && r.type === 'QueryFinish');
  const start = log.find((r) => r.query_id === 'right-key' && r.type === 'QueryStart');
  check(start && fin, `query_log has QueryStart and QueryFinish of a query: ${String(JSON.stringify(log)).slice(0, 400)}`);
  if (fin) {
    check(Number(fin.read_rows) === 1000 && Number(fin.read_bytes) > 0 && Number(fin.result_rows) === 1 &&
      Number(fin.written_rows) === 0, `QueryFinish counts: read_rows=${fin.read_rows} read_bytes=${fin.read_bytes} ` +
      `result_rows=${fin.result_rows} written_rows=${fin.written_rows}`);
    check(Number(fin.memory_usage) > 0 && Number(fin.query_duration_ms) >= 0 && fin.exception === '',
      `QueryFinish memory_usage=${fin.memory_usage} query_duration_ms=${fin.query_duration_ms}`);
    check(/READER2/.test(fin.query) && /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/.test(fin.event_time),
      `the query's text and event_time: ${fin.event_time}`);
    check(fin.query.includes("'READER2', '[HIDDEN]', 'CSVWithNames'") && !fin.query.includes('reader2-secret'),
      `the secret given to s3() is hidden in the logged text: ${fin.query}`);
    check(Number(fin.is_initial_query) === 1 && fin.initial_query_id === 'right-key',
      `a query from a client is initial: is_initial_query=${fin.is_initial_query} initial_query_id=${fin.initial_query_id}`);
  }
  const exc = log.find((r) => r.query_id === 'wrong-secret' && r.type.startsWith('Exception'));
  check(exc && /given to s3\(\)/.test(exc.exception), `the refused query's exception is logged: ${String(JSON.stringify(exc)).slice(0, 300)}`);

  // the SQL over it, as ClickHouse's guides write it
  const agg = await rows("SELECT type, count() AS c FROM system.query_log WHERE query_id = 'own-access' GROUP BY type ORDER BY type");
  check(JSON.stringify(agg) === '[{"type":"QueryFinish","c":"1"},{"type":"QueryStart","c":"1"}]',
    `GROUP BY over query_log: ${JSON.stringify(agg)}`);

  // bounded: at most --query-log-size rows, the oldest gone first
  for (let i = 0; i < 20; i++) await rows('SELECT 1 AS one', `fill-${i}`);
  const n = await rows('SELECT count() AS n, countIf(query_id = \'own-access\') AS old FROM system.query_log');
  check(Number(n[0].n) <= 16 && Number(n[0].old) === 0,
    `the ring keeps at most --query-log-size (16) rows, the oldest gone: ${JSON.stringify(n)}`);
}

await client.close();
await finish(srv);
