// SPDX-License-Identifier: Apache-2.0
//
// test_server_jsclient: the official ClickHouse JS client (@clickhouse/client,
// pinned in package.json) against a real `ringcache server` over a real S3
// server: ping, query in JSON / JSONEachRow / TabSeparated / JSONCompact,
// query_params, clickhouse_settings (an unknown one refused), command, exec,
// response compression, a session (USE, SET), errors surfacing as
// ClickHouseError with ClickHouse's code and type (syntax, unknown table,
// memory limit), INSERT JSONEachRow into a table (once the server has tables:
// skipped with a message until then), and a query cancelled by aborting its
// request: the server stops it (system.processes no longer has it, the query
// log says QUERY_WAS_CANCELLED). The server must exit 0 on SIGTERM.
import { createRequire } from 'node:module';
import path from 'node:path';
import { check, finish, nodeModules, skip, sleep, startS3, startServer, tempDir } from './srvutil.mjs';

const require = createRequire(import.meta.url);
let ch;
try {
  ch = require(path.join(nodeModules, '@clickhouse/client'));
} catch (e) {
  skip(`@clickhouse/client is not in ${nodeModules} (run npm ci): ${e.message}`);
}
const { createClient, ClickHouseError } = ch;

tempDir('test_server_jsclient');
const s3 = await startS3();
const srv = await startServer(['--s3-endpoint', s3.endpoint, '--warehouse', 's3://ringcache-test/wh/',
  '--max-threads', '2']);
const client = createClient({ url: srv.url, request_timeout: 60000 });

async function expectError(p, code, type, what) {
  try {
    await p;
    check(false, `${what}: expected ClickHouseError ${code} ${type}, got success`);
  } catch (e) {
    const ok = e instanceof ClickHouseError && e.code === String(code) && e.type === type;
    check(ok, `${what}: ClickHouseError code ${code} type ${type} (got ${e.constructor.name} ` +
      `code=${e.code} type=${e.type}: ${String(e.message).slice(0, 200)})`);
  }
}

// ping
const ping = await client.ping();
check(ping.success === true, 'ping() succeeds');

// JSON: meta, data, rows, statistics
{
  const rs = await client.query({ query: 'SELECT number, CAST(number AS String) AS s FROM numbers(5)', format: 'JSON' });
  const j = await rs.json();
  check(j.rows === 5 && j.data.length === 5, 'JSON: 5 rows');
  check(j.meta.length === 2 && j.meta[0].name === 'number' && j.meta[0].type === 'UInt64' &&
    j.meta[1].type === 'String', 'JSON: meta names and types');
  check(j.data[4].number === '4' && j.data[4].s === '4', 'JSON: UInt64 quoted as ClickHouse does');
  check(j.statistics && j.statistics.rows_read === 5 && typeof j.statistics.elapsed === 'number',
    'JSON: statistics');
  check(rs.query_id.length > 0, 'a query id comes back');
}

// JSONEachRow, TabSeparated, JSONCompactEachRow
{
  const rows = await (await client.query({ query: 'SELECT number * 2 AS d FROM numbers(3)', format: 'JSONEachRow' })).json();
  check(JSON.stringify(rows) === '[{"d":"0"},{"d":"2"},{"d":"4"}]', `JSONEachRow: ${JSON.stringify(rows)}`);
  const tsv = await (await client.query({ query: "SELECT 1 AS a, 'x\\ty' AS b", format: 'TabSeparated' })).text();
  check(tsv === '1\tx\\ty\n', `TabSeparated: ${JSON.stringify(tsv)}`);
  const cmp = await (await client.query({ query: 'SELECT 1, 2', format: 'JSONCompactEachRow' })).json();
  check(JSON.stringify(cmp) === '[[1,2]]', `JSONCompactEachRow: ${JSON.stringify(cmp)}`);
  const first = await (await client.query({ query: "SELECT version() AS v, currentDatabase() AS d, 'ping' AS p", format: 'JSONEachRow' })).json();
  check(first[0].d === 'default' && first[0].p === 'ping' && /^\d+\.\d+/.test(first[0].v),
    `what clients send first: ${JSON.stringify(first)}`);
  // streaming: rows as they come
  const rs = await client.query({ query: 'SELECT number FROM numbers(100000)', format: 'JSONEachRow' });
  let n = 0;
  for await (const chunk of rs.stream()) n += chunk.length;
  check(n === 100000, `stream(): ${n} rows`);
}

// query_params and clickhouse_settings
{
  const r = await (await client.query({
    query: 'SELECT {x:UInt32} AS x, {x:UInt32} + 1 AS y, {s:String} AS s',
    query_params: { x: 41, s: "it's a \\ test" },
    format: 'JSONEachRow',
  })).json();
  /* UInt32 is a bare number; UInt32 + UInt8 is UInt64, quoted, as in ClickHouse */
  check(r[0].x === 41 && r[0].y === '42' && r[0].s === "it's a \\ test",
    `query_params: ${JSON.stringify(r)}`);
  const t = await (await client.query({
    query: "SELECT value FROM system.settings WHERE name = 'max_threads'",
    clickhouse_settings: { max_threads: 1 },
    format: 'JSONEachRow',
  })).json();
  check(t[0].value === '1', `clickhouse_settings reach the query: ${JSON.stringify(t)}`);
  await expectError(client.query({ query: 'SELECT 1', clickhouse_settings: { max_threadz: 1 } }),
    115, 'UNKNOWN_SETTING', 'an unknown setting');
}

// command and exec
{
  const c = await client.command({ query: 'SYSTEM DROP PAGE CACHE' });
  check(c.query_id.length > 0, 'command()');
  const e = await client.exec({ query: 'SELECT 40 + 2 FORMAT TabSeparated' });
  let out = '';
  for await (const b of e.stream) out += b.toString();
  check(out === '42\n', `exec(): ${JSON.stringify(out)}`);
}

// errors as ClickHouseError
await expectError(client.query({ query: 'SELEC 1' }), 62, 'SYNTAX_ERROR', 'a syntax error');
await expectError(client.query({ query: 'SELECT * FROM nope' }), 60, 'UNKNOWN_TABLE', 'an unknown table');
await expectError(client.query({ query: 'SELECT nope FROM numbers(1)' }), 47, 'UNKNOWN_IDENTIFIER', 'an unknown column');
await expectError(client.query({
  query: 'SELECT number, count() FROM numbers(2000000) GROUP BY number',
  clickhouse_settings: { max_memory_usage: '1000000' },
}), 241, 'MEMORY_LIMIT_EXCEEDED', 'a query over its max_memory_usage');

// response compression (gzip), decoded by the client
{
  const z = createClient({ url: srv.url, compression: { response: true } });
  const r = await (await z.query({ query: 'SELECT count() AS c FROM numbers(12345)', format: 'JSONEachRow' })).json();
  check(r[0].c === '12345', `compressed answer: ${JSON.stringify(r)}`);
  await z.close();
}

// a session: USE and SET stay for the session_id
{
  const sid = `s-${process.pid}`;
  const sc = createClient({ url: srv.url, session_id: sid });
  await sc.command({ query: 'USE system' });
  await sc.command({ query: 'SET max_threads = 1' });
  const r = await (await sc.query({
    query: "SELECT currentDatabase() AS d, value FROM settings WHERE name = 'max_threads'",
    format: 'JSONEachRow',
  })).json();
  check(r.length === 1 && r[0].d === 'system' && r[0].value === '1', `session: ${JSON.stringify(r)}`);
  await sc.close();
}

// INSERT JSONEachRow into a table, when the server has tables
{
  let tables = true;
  try {
    await client.command({ query: 'CREATE TABLE js_t (a UInt32, b String) ENGINE = MergeTree ORDER BY a' });
  } catch (e) {
    tables = false;
    console.log(`SKIP insert: this server cannot create tables yet (${e.code} ${e.type}: ` +
      `${String(e.message).slice(0, 120)})`);
  }
  if (tables) {
    await client.insert({ table: 'js_t', values: [{ a: 1, b: 'x' }, { a: 2, b: 'y' }], format: 'JSONEachRow' });
    const r = await (await client.query({ query: 'SELECT a, b FROM js_t ORDER BY a', format: 'JSONEachRow' })).json();
    check(JSON.stringify(r) === '[{"a":1,"b":"x"},{"a":2,"b":"y"}]', `insert then select: ${JSON.stringify(r)}`);
    // the client's default format, JSONCompactEachRow: rows as arrays, by position
    await client.insert({ table: 'js_t', values: [[3, 'z, "q"'], [4, '[w]']] });
    await client.insert({ table: 'js_t', values: [{ b: 'named', a: 5 }], columns: ['b', 'a'], format: 'JSONEachRow' });
    const r2 = await (await client.query({ query: 'SELECT a, b FROM js_t WHERE a >= 3 ORDER BY a', format: 'JSONEachRow' })).json();
    check(JSON.stringify(r2) === '[{"a":3,"b":"z, \\"q\\""},{"a":4,"b":"[w]"},{"a":5,"b":"named"}]',
      `insert in the default JSONCompactEachRow: ${JSON.stringify(r2)}`);
    await expectError(client.insert({ table: 'js_t', values: [[1, 'x', 'extra']] }), 27,
      'CANNOT_PARSE_INPUT_ASSERTION_FAILED', 'a JSONCompactEachRow row of the wrong width');
  } else {
    // until then the INSERT path answers as ClickHouse does for a missing table
    await expectError(client.insert({ table: 'js_t', values: [{ a: 1 }], format: 'JSONEachRow' }),
      60, 'UNKNOWN_TABLE', 'INSERT into a table that does not exist');
  }
}

// a query cancelled by aborting its request stops on the server
{
  const qid = `abort-${process.pid}`;
  const ac = new AbortController();
  const p = client.query({ query: 'SELECT count() FROM system.numbers', query_id: qid, abort_signal: ac.signal });
  let seen = false;
  for (let i = 0; i < 100 && !seen; i++) {
    const r = await (await client.query({
      query: `SELECT query_id FROM system.processes WHERE query_id = '${qid}'`, format: 'JSONEachRow',
    })).json();
    seen = r.length === 1;
    if (!seen) await sleep(50);
  }
  check(seen, 'the endless query runs (system.processes has it)');
  ac.abort();
  try {
    await p;
    check(false, 'the aborted query fails on the client');
  } catch (e) {
    check(true, `the aborted query fails on the client (${e.message.slice(0, 60)})`);
  }
  let gone = false;
  for (let i = 0; i < 200 && !gone; i++) {
    const r = await (await client.query({
      query: `SELECT query_id FROM system.processes WHERE query_id = '${qid}'`, format: 'JSONEachRow',
    })).json();
    gone = r.length === 0;
    if (!gone) await sleep(50);
  }
  check(gone, 'the server stopped it: system.processes no longer has it');
  const log = await (await client.query({
    query: `SELECT type, exception_code FROM system.query_log WHERE query_id = '${qid}' AND type != 'QueryStart'`,
    format: 'JSONEachRow',
  })).json();
  check(log.length === 1 && log[0].type === 'ExceptionWhileProcessing' && log[0].exception_code === 394,
    `the query log says it was cancelled: ${JSON.stringify(log)}`);
}

await client.close();
await finish(srv);
