// SPDX-License-Identifier: Apache-2.0
//
// test_server_load: 50 concurrent clients (the official @clickhouse/client,
// one each) run mixed queries against one `ringcache server` for --seconds
// (bounded too by --max-queries per client): trivial SELECTs, aggregations
// over numbers(), a JSON answer, query parameters, system.processes. Every
// one must succeed with the right answer; meanwhile one more client keeps
// sending a GROUP BY over its max_memory_usage, which must fail alone with
// MEMORY_LIMIT_EXCEEDED. The server's resident memory after the run may not
// have grown past the one measured after a warm-up by more than a bound
// (flat: no leak per query), and the server exits 0 on SIGTERM.
import fs from 'node:fs';
import { check, finish, requireClient, startServer, tempDir } from './srvutil.mjs';

const argv = process.argv.slice(2);
const arg = (name, def) => {
  const i = argv.indexOf(name);
  return i >= 0 ? Number(argv[i + 1]) : def;
};
const seconds = arg('--seconds', 5);
const maxQueries = arg('--max-queries', 5000);
const nClients = arg('--clients', 50);

const ch = await requireClient();
const { createClient, ClickHouseError, ClickHouseLogLevel } = ch;
const log = { level: ClickHouseLogLevel.OFF }; // the greedy client's failures are expected
tempDir('test_server_load');
const srv = await startServer(['--max-concurrent-queries', '200', '--page-cache', '64MiB',
  '--max-threads', '2']);

function rssKiB(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : 0;
}

const mix = [
  { q: 'SELECT 1 AS x', want: (r) => r.length === 1 && r[0].x === 1 },
  { q: 'SELECT count() AS c FROM numbers(100000)', want: (r) => r[0].c === '100000' },
  {
    q: 'SELECT number % 7 AS k, count() AS c FROM numbers(70000) GROUP BY k ORDER BY k',
    want: (r) => r.length === 7 && r.every((x) => x.c === '10000'),
  },
  {
    q: 'SELECT {a:UInt32} + {b:UInt32} AS s',
    params: { a: 40, b: 2 },
    want: (r) => r[0].s === '42',
  },
  { q: "SELECT count() AS n FROM system.processes", want: (r) => Number(r[0].n) >= 1 },
  { q: 'SELECT sum(number) AS s FROM numbers(1000)', want: (r) => r[0].s === '499500' },
];

async function runClient(i, until, limit = maxQueries) {
  const c = createClient({ url: srv.url, request_timeout: 60000, max_open_connections: 1, log });
  let n = 0;
  let errors = 0;
  let wrong = 0;
  let firstError = '';
  while (Date.now() < until && n < limit) {
    const m = mix[(i + n) % mix.length];
    n++;
    try {
      const rs = await c.query({ query: m.q, format: 'JSONEachRow', query_params: m.params });
      const rows = await rs.json();
      if (!m.want(rows)) {
        wrong++;
        if (!firstError) firstError = `${m.q}: ${JSON.stringify(rows).slice(0, 200)}`;
      }
    } catch (e) {
      errors++;
      if (!firstError) firstError = `${m.q}: ${e.message}`;
    }
  }
  await c.close();
  return { n, errors, wrong, firstError };
}

async function runGreedy(until) {
  const c = createClient({ url: srv.url, request_timeout: 60000, max_open_connections: 1, log });
  let n = 0;
  let limited = 0;
  let other = '';
  while (Date.now() < until && n < maxQueries) {
    n++;
    try {
      await c.query({
        query: 'SELECT number, count() FROM numbers(3000000) GROUP BY number',
        clickhouse_settings: { max_memory_usage: '2000000' },
        format: 'JSONEachRow',
      }).then((rs) => rs.text());
      other = other || 'a query over its memory limit succeeded';
    } catch (e) {
      if (e instanceof ClickHouseError && e.code === '241' && e.type === 'MEMORY_LIMIT_EXCEEDED') limited++;
      else other = other || e.message;
    }
  }
  await c.close();
  return { n, limited, other };
}

// warm-up: the mix twice per client, then the reference RSS
{
  const w = await Promise.all(Array.from({ length: nClients },
    (_, i) => runClient(i, Date.now() + 30000, 2 * mix.length)));
  check(w.every((r) => r.errors === 0 && r.wrong === 0), `the warm-up ran clean ${w.find((r) => r.firstError)?.firstError || ''}`);
}
const t0 = Date.now();
const rss0 = rssKiB(srv.proc.pid);
const until = Date.now() + seconds * 1000;
const [results, greedy] = await Promise.all([
  Promise.all(Array.from({ length: nClients }, (_, i) => runClient(i, until))),
  runGreedy(until),
]);
const rss1 = rssKiB(srv.proc.pid);
const total = results.reduce((a, r) => a + r.n, 0);
const errors = results.reduce((a, r) => a + r.errors, 0);
const wrong = results.reduce((a, r) => a + r.wrong, 0);
const first = results.find((r) => r.firstError)?.firstError || '';
console.log(`${nClients} clients, ${((Date.now() - t0) / 1000).toFixed(1)} s: ${total} queries, ` +
  `${errors} errors, ${wrong} wrong answers; the greedy client: ${greedy.n} queries, ` +
  `${greedy.limited} MEMORY_LIMIT_EXCEEDED; RSS ${rss0} KiB after the warm-up, ${rss1} KiB after`);
check(total >= nClients, `every client ran (${total} queries)`);
check(errors === 0, `no errors among the ${total} queries ${first}`);
check(wrong === 0, `every answer right ${first}`);
check(greedy.n >= 1 && greedy.limited === greedy.n,
  `each query over its max_memory_usage failed alone with MEMORY_LIMIT_EXCEEDED (${greedy.limited}/${greedy.n}) ${greedy.other}`);
// flat: at most 64 MiB or 50 % more than after the warm-up (the page cache is 64 MiB)
check(rss1 <= Math.max(rss0 * 1.5, rss0 + 65536), `memory flat: ${rss0} -> ${rss1} KiB`);
await finish(srv);
