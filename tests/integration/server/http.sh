#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_server_http: the raw forms of ClickHouse's HTTP interface against a real
# `ringcache server`, with curl (and bash's /dev/tcp for what curl will not
# send): /ping and friends; the query in query=, in the body, and as a prefix
# plus the body; the answer's headers (Query-Id, Format, Timezone, Summary,
# Keep-Alive) and keep-alive; default_format and X-ClickHouse-Format;
# settings as parameters (an unknown one refused), readonly for GET;
# param_x; gzip / deflate / zstd answers and a gzip request body; errors in
# ClickHouse's shape, code header and status; wait_end_of_query and an error
# after the head; a users file (sha256 passwords, Basic, X-ClickHouse-User/
# Key, parameters, mixing refused, networks, a readonly profile);
# sessions; max_concurrent_queries, max_execution_time, KILL QUERY; bodies
# and queries over their limits, a slow client, malformed requests: clear 4xx
# and the server stays up; /metrics; SIGTERM lets a running query finish and
# the server exits 0. Every process is stopped and the temp folder removed,
# whatever happens.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=${RINGCACHE_SOURCE_DIR:-$(cd "$here/../../.." && pwd)}
build=${RINGCACHE_BUILD_DIR:-$src/build/release}
bin=$build/ingest/cli/ringcache

skip() { echo "SKIP: $*" >&2; exit 77; }
command -v curl >/dev/null || skip "curl not found (Debian package curl)"
command -v gunzip >/dev/null || skip "gunzip not found (Debian package gzip)"
[[ -x $bin ]] || skip "$bin is not built"

tmp=$(mktemp -d "${RINGCACHE_TEST_TMP:-/tmp}/test_server_http.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  [[ -n ${RINGCACHE_TEST_KEEP:-} ]] || rm -rf "$tmp"
}
trap cleanup EXIT

fails=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
eq() { # got want what
  if [[ $1 == "$2" ]]; then ok "$3"; else fail "$3: got [$1], want [$2]"; fi
}
has() { # text substring what
  if [[ $1 == *"$2"* ]]; then ok "$3"; else fail "$3: [$2] not in [${1:0:600}]"; fi
}

# start NAME ARGS...: a server on a free port; sets port_NAME and pid_NAME
start() {
  local name=$1; shift
  local pf=$tmp/$name.port
  "$bin" server --port 0 --port-file "$pf" "$@" >"$tmp/$name.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  for _ in $(seq 200); do
    [[ -s $pf ]] && break
    kill -0 "$pid" 2>/dev/null || { cat "$tmp/$name.log" >&2; echo "FAIL: $name did not start" >&2; exit 1; }
    sleep 0.05
  done
  [[ -s $pf ]] || { echo "FAIL: $name wrote no port file" >&2; exit 1; }
  printf -v "port_$name" '%s' "$(cat "$pf")"
  printf -v "pid_$name" '%s' "$pid"
}

# r ARGS...: curl; sets code (HTTP status), body, head
r() {
  code=$(curl -s -o "$tmp/body" -D "$tmp/head" -w '%{http_code}' "$@")
  body=$(cat "$tmp/body")
  head=$(tr -d '\r' <"$tmp/head")
}
header() { # NAME: its value in $head
  grep -i "^$1:" <<<"$head" | head -1 | sed -E 's/^[^:]*: ?//'
}

start main --max-concurrent-queries 4 --max-body-size 1MiB --request-timeout 1s --drain-timeout 10m
U=http://127.0.0.1:$port_main

# ---- routes ------------------------------------------------------------------------
r "$U/ping"; eq "$code $body" "200 Ok." "/ping"
r "$U/replicas_status"; eq "$code $body" "200 Ok." "/replicas_status"
r "$U/"; eq "$code $body" "200 Ok." "GET / without a query"
r "$U/play"; eq "$code" "404" "an unknown path is 404"
r -X OPTIONS "$U/"; eq "$code" "204" "OPTIONS is a CORS preflight"

# ---- the three places of the query ---------------------------------------------------
r "$U/?query=SELECT+1"; eq "$code $body" "200 1" "GET ?query="
eq "$(header X-ClickHouse-Format)" "TabSeparated" "X-ClickHouse-Format"
eq "$(header X-ClickHouse-Timezone)" "UTC" "X-ClickHouse-Timezone"
has "$(header X-ClickHouse-Summary)" '"read_rows":"1","read_bytes":"1","written_rows":"0"' "X-ClickHouse-Summary, every value a string"
has "$(header X-ClickHouse-Summary)" '"result_rows":"1","result_bytes":"2","elapsed_ns":"' "Summary's result"
eq "$(header Keep-Alive)" "timeout=30" "Keep-Alive"
[[ $(header X-ClickHouse-Query-Id) =~ ^[0-9a-f-]{36}$ ]] && ok "a generated query id" || fail "query id [$(header X-ClickHouse-Query-Id)]"
r "$U/?query_id=my-q-1" --data-binary "SELECT 2"; eq "$code $body" "200 2" "POST body"
eq "$(header X-ClickHouse-Query-Id)" "my-q-1" "query_id is kept"
r "$U/?query=SELECT" --data-binary " 40 + 2"; eq "$body" "42" "query= then a line feed then the body"
r "$U/?query=SEL" --data-binary "ECT 1"; eq "$code $(header X-ClickHouse-Exception-Code)" "400 62" "SEL + ECT is two lines, a syntax error (as in ClickHouse's docs)"
r "$U/?query=SELECT+1;SELECT+2"; has "$body" "Multi-statements are not allowed" "multi-statements refused"
r "$U/?query=SELECT+1;"; eq "$body" "1" "a trailing ';' is fine"
r -X POST "$U/"; eq "$code $(header X-ClickHouse-Exception-Code)" "400 62" "an empty POST"
r -H 'Transfer-Encoding: chunked' --data-binary "SELECT 7" "$U/"; eq "$body" "7" "a chunked POST body"

# ---- formats -------------------------------------------------------------------------
r "$U/?query=SELECT+number+FROM+numbers(2)&default_format=JSONEachRow"
eq "$body" $'{"number":"0"}\n{"number":"1"}' "default_format"
eq "$(header Content-Type)" "application/json; charset=UTF-8" "JSON's Content-Type"
r -H 'X-ClickHouse-Format: CSV' "$U/?query=SELECT+'a',1&default_format=JSONEachRow"
eq "$body" '"a",1' "X-ClickHouse-Format wins over default_format"
r "$U/?query=SELECT+1+AS+a+FORMAT+JSONCompact"
eq "$(header X-ClickHouse-Format)" "JSONCompact" "FORMAT of the query in X-ClickHouse-Format"
has "$body" $'"data":\n\t[\n\t\t[1]\n\t],' "JSONCompact's data"
r "$U/?query=SELECT+1&default_format=Nope"; eq "$code $(header X-ClickHouse-Exception-Code)" "404 73" "an unknown format"

# ---- settings --------------------------------------------------------------------------
r "$U/?query=SELECT+value+FROM+system.settings+WHERE+name='max_threads'&max_threads=3"
eq "$body" "3" "a setting as a URL parameter"
r "$U/?query=SELECT+1&max_threadz=3"
eq "$code $(header X-ClickHouse-Exception-Code)" "404 115" "an unknown setting: 404 UNKNOWN_SETTING"
has "$body" "(UNKNOWN_SETTING)" "its name in the body"
r "$U/?query=SELECT+1&max_threads=lots"; eq "$(header X-ClickHouse-Exception-Code)" "471" "a bad value"
r "$U/?query=SYSTEM+DROP+PAGE+CACHE"; eq "$code $(header X-ClickHouse-Exception-Code)" "500 164" "GET implies readonly"
r --data-binary "SYSTEM DROP PAGE CACHE" "$U/"; eq "$code" "200" "the same by POST"
r "$U/?query=SELECT+value+FROM+system.settings+WHERE+name='readonly'"; eq "$body" "2" "GET runs with readonly 2"

# ---- query parameters -------------------------------------------------------------------
r -G "$U/" --data-urlencode 'query=SELECT {x:UInt8} + 1, {s:String}, {t:Identifier} FROM numbers(1)' \
  --data-urlencode 'param_x=41' --data-urlencode "param_s=o'k\\tx" --data-urlencode 'param_t=number'
eq "$body" $'42\to\\\'k\\tx\t0' "param_x substituted as typed literals"
r -G "$U/" --data-urlencode 'query=SELECT {x:UInt8}' --data-urlencode 'param_x=300'
eq "$(header X-ClickHouse-Exception-Code)" "457" "a value that is not of its type: BAD_QUERY_PARAMETER"
r -G "$U/" --data-urlencode 'query=SELECT {y:String}'
eq "$(header X-ClickHouse-Exception-Code)" "456" "a parameter without a value: UNKNOWN_QUERY_PARAMETER"
r "$U/?query=SELECT+1&bad=%zz"; eq "$code $(header X-ClickHouse-Exception-Code)" "400 36" "a bad %-escape"

# ---- compression -------------------------------------------------------------------------
q="SELECT+number+FROM+numbers(50000)"
curl -s -H 'Accept-Encoding: gzip' -D "$tmp/h" -o "$tmp/z" "$U/?query=$q&enable_http_compression=1"
eq "$(tr -d '\r' <"$tmp/h" | grep -i '^Content-Encoding' | cut -d' ' -f2)" "gzip" "gzip with enable_http_compression=1"
eq "$(gunzip <"$tmp/z" | wc -l)" "50000" "the gzip answer decodes whole"
if command -v zstd >/dev/null; then
  curl -s -H 'Accept-Encoding: zstd' -o "$tmp/z" "$U/?query=$q&enable_http_compression=1"
  eq "$(zstd -dc <"$tmp/z" | tail -1)" "49999" "zstd"
fi
curl -s -H 'Accept-Encoding: deflate' -o "$tmp/z" "$U/?query=SELECT+1&enable_http_compression=1"
eq "$(python3 -c 'import sys,zlib; print(zlib.decompress(sys.stdin.buffer.read()).decode().strip())' <"$tmp/z")" "1" "deflate"
r -H 'Accept-Encoding: gzip' "$U/?query=SELECT+1"; eq "$body" "1" "no compression without enable_http_compression"
printf 'SELECT 5 * 5' | gzip >"$tmp/q.gz"
r -H 'Content-Encoding: gzip' --data-binary @"$tmp/q.gz" "$U/"; eq "$body" "25" "a gzip request body"
r -H 'Content-Encoding: br2' --data-binary "SELECT 1" "$U/"; eq "$(header X-ClickHouse-Exception-Code)" "89" "an unknown Content-Encoding"

# ---- errors ------------------------------------------------------------------------------
r "$U/?query=SELECT+*+FROM+nope"
eq "$code $(header X-ClickHouse-Exception-Code)" "404 60" "an unknown table: 404"
[[ $body =~ ^Code:\ 60\.\ DB::Exception:\ .*\.\ \(UNKNOWN_TABLE\)\ \(version\ [0-9.]+\)$ ]] && ok "the error's shape" || fail "error shape: [$body]"
r "$U/?query=SELECT+nofn(1)"; eq "$code $(header X-ClickHouse-Exception-Code)" "404 46" "an unknown function"
r "$U/?query=SELECT+number,count()+FROM+numbers(1000000)+GROUP+BY+number&max_memory_usage=1000000"
eq "$code $(header X-ClickHouse-Exception-Code)" "500 241" "over max_memory_usage"

# a slow sparse query: few rows, then the time is up
slow="SELECT+number+FROM+system.numbers+WHERE+number+%25+50000000+=+0"
r "$U/?query=$slow&max_execution_time=0.5"
eq "$code $(header X-ClickHouse-Exception-Code)" "408 159" "max_execution_time before the head: 408 TIMEOUT_EXCEEDED"
r "$U/?query=$slow&max_execution_time=0.5&http_response_buffer_size=1"
eq "$code" "200" "with a 1-byte buffer the head goes at the first row"
has "$body" "Code: 159. DB::Exception: Timeout exceeded" "then the error ends the body"
r "$U/?query=$slow&max_execution_time=0.5&http_response_buffer_size=1&wait_end_of_query=1"
eq "$code" "408" "wait_end_of_query keeps the status for the error"
# progress in the head while the query runs, then the summary
# (LIMIT 3: 100M numbers, several intervals long on a quiet machine too)
r "$U/?query=$slow+LIMIT+3+SETTINGS+max_threads=1&send_progress_in_http_headers=1&http_headers_progress_interval_ms=100"
n_progress=$(grep -c '^X-ClickHouse-Progress: {"read_rows":"[1-9]' <<<"$head")
[[ $code == 200 && $n_progress -ge 1 ]] && ok "send_progress_in_http_headers: $n_progress X-ClickHouse-Progress headers" ||
  fail "send_progress_in_http_headers: code $code, $n_progress progress headers in [${head:0:600}]"
has "$(header X-ClickHouse-Summary)" '"result_rows":"3"' "and X-ClickHouse-Summary after them"
r "$U/?query=$slow+LIMIT+2+SETTINGS+max_threads=1"
eq "$(grep -c '^X-ClickHouse-Progress' <<<"$head")" "0" "no progress headers without the setting"

# ---- sessions ----------------------------------------------------------------------------
r --data-binary "USE system" "$U/?session_id=s1"; eq "$code" "200" "USE in a session"
r --data-binary "SET max_threads = 1" "$U/?session_id=s1"; eq "$code" "200" "SET in a session"
r "$U/?session_id=s1&query=SELECT+currentDatabase(),value+FROM+settings+WHERE+name='max_threads'"
eq "$body" $'system\t1' "the session keeps both"
r "$U/?query=SELECT+currentDatabase()"; eq "$body" "default" "another request is not in the session"
r "$U/?session_id=nope&session_check=1&query=SELECT+1"; eq "$(header X-ClickHouse-Exception-Code)" "372" "session_check"
r "$U/?query=SELECT+1&database=nope"; eq "$code $(header X-ClickHouse-Exception-Code)" "404 81" "an unknown database"
r "$U/?query=SHOW+DATABASES"; eq "$body" $'default\nsystem' "SHOW DATABASES"
r "$U/?query=EXISTS+TABLE+system.query_log"; eq "$body" "1" "EXISTS TABLE (yes)"
r "$U/?query=EXISTS+nope"; eq "$body" "0" "EXISTS (no)"

# ---- limits, cancellation ---------------------------------------------------------------
endless="SELECT+count()+FROM+system.numbers"
running() { curl -s "$U/metrics" | awk '$1 == "ringcache_server_queries_running" {print $2}'; }
bg=()
for i in 1 2 3 4; do
  curl -s -o "$tmp/bg$i" "$U/?query_id=bg$i&query=$endless&max_execution_time=30" &
  bg+=($!)
  pids+=($!)
done
for _ in $(seq 200); do [[ $(running) == 4 ]] && break; sleep 0.05; done
eq "$(running)" "4" "four queries run (max_concurrent_queries is 4)"
r "$U/?query=SELECT+1"; eq "$code $(header X-ClickHouse-Exception-Code)" "500 202" "a fifth: TOO_MANY_SIMULTANEOUS_QUERIES"
r "$U/ping"; eq "$body" "Ok." "/ping still answers"
kill -KILL "${bg[3]}"; wait "${bg[3]}" 2>/dev/null
for _ in $(seq 200); do [[ $(running) == 3 ]] && break; sleep 0.05; done
eq "$(running)" "3" "a client that goes away cancels its query"
r --data-binary "KILL QUERY WHERE query_id = 'bg1'" "$U/"
eq "$(cut -f1,2 <<<"$body")" $'waiting\tbg1' "KILL QUERY names the query"
r --data-binary "KILL QUERY WHERE query_id = 'bg2' SYNC" "$U/"
eq "$(cut -f1,2 <<<"$body")" $'finished\tbg2' "KILL QUERY SYNC"
r --data-binary "KILL QUERY WHERE query_id = 'bg3'" "$U/"
wait "${bg[0]}" "${bg[1]}" "${bg[2]}" 2>/dev/null
has "$(cat "$tmp/bg1")" "(QUERY_WAS_CANCELLED)" "the killed query's client hears QUERY_WAS_CANCELLED"
r "$U/?query=SELECT+count()+FROM+system.query_log+WHERE+query_id+IN+('bg2','bg4')+AND+exception_code=394"
eq "$body" "2" "the query log says both were cancelled"

# ---- bodies and requests over their limits; slow and malformed clients --------------------
head -c 2000000 /dev/zero | tr '\0' 'x' >"$tmp/big"
r -H 'Content-Type: text/plain' --data-binary @"$tmp/big" "$U/?query=INSERT+INTO+t+FORMAT+TSV"
eq "$code $(header X-ClickHouse-Exception-Code)" "413 229" "a body over max-body-size: 413"
head -c 300000 /dev/zero | tr '\0' ' ' >"$tmp/long.sql"; echo "SELECT 1" >>"$tmp/long.sql"
r --data-binary @"$tmp/long.sql" "$U/"
eq "$code $(header X-ClickHouse-Exception-Code)" "413 229" "a query over max_query_size: 413"
r "$U/?query=SELECT+1&$(head -c 70000 /dev/zero | tr '\0' 'a')=1"; eq "$code" "414" "a URL over the limit: 414"
raw() { # bytes to send, then read the answer (at most 3 s)
  exec 3<>/dev/tcp/127.0.0.1/"$port_main"
  printf '%b' "$1" >&3
  timeout 3 head -c 200 <&3 | tr -d '\r' | head -1
  exec 3<&- 3>&-
}
eq "$(raw 'GARBAGE\r\n\r\n')" "HTTP/1.1 400 Bad Request" "a malformed request line: 400"
eq "$(raw 'GET /ping HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n')" "HTTP/1.1 400 Bad Request" "a malformed header: 400"
eq "$(raw 'GET /ping HTTP/1.1\r\nHost: x\r\n')" "HTTP/1.1 408 Request Timeout" "a head that stops coming: 408 after --request-timeout"
eq "$(raw 'POST /?query=SELECT HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n 1')" "HTTP/1.1 500 Internal Server Error" "a body that stops coming: an error, not a hang"
r "$U/ping"; eq "$body" "Ok." "the server stays up"

# ---- /metrics, keep-alive, HTTP/1.0 ----------------------------------------------------------
r "$U/metrics"; has "$body" "ringcache_server_queries_total" "/metrics"
has "$body" 'ringcache_server_query_failures_total{code="62",name="SYNTAX_ERROR"}' "failures by code"
# a request refused before its query starts counts by its code too (the unknown setting above)
has "$body" 'ringcache_server_query_failures_total{code="115",name="UNKNOWN_SETTING"} 1' "refusals by code"
curl -sv "$U/?query=SELECT+1" "$U/?query=SELECT+2" >"$tmp/ka.out" 2>"$tmp/ka.err"
has "$(cat "$tmp/ka.err")" "Re-using existing connection" "keep-alive between queries"
r -0 "$U/?query=SELECT+3"; eq "$body" "3" "HTTP/1.0"
has "$head" "Connection: close" "HTTP/1.0 closes"

# ---- users ----------------------------------------------------------------------------------
pw=$(printf %s 's3cret' | sha256sum | cut -d' ' -f1)
cat >"$tmp/users" <<EOF
[user default]
[user alice]
password_sha256_hex = $pw
[user reader]
readonly = 1
max_memory_usage = 1000000
[user far]
networks = 10.0.0.0/8
[user locked]
password_sha256_hex = $pw
EOF
start auth --users "$tmp/users"
A=http://127.0.0.1:$port_auth
r -u alice:s3cret "$A/?query=SELECT+currentUser()"; eq "$code $body" "200 alice" "Basic"
r -H 'X-ClickHouse-User: alice' -H 'X-ClickHouse-Key: s3cret' "$A/?query=SELECT+currentUser()"; eq "$body" "alice" "X-ClickHouse-User and -Key"
r "$A/?user=alice&password=s3cret&query=SELECT+currentUser()"; eq "$body" "alice" "user and password parameters"
r -u alice:wrong "$A/?query=SELECT+1"; eq "$code $(header X-ClickHouse-Exception-Code)" "403 516" "a wrong password: 403 AUTHENTICATION_FAILED"
r -u nobody: "$A/?query=SELECT+1"; eq "$code $(header X-ClickHouse-Exception-Code)" "403 516" "an unknown user"
r -u alice:s3cret "$A/?user=alice&query=SELECT+1"; eq "$code $(header X-ClickHouse-Exception-Code)" "403 516" "two ways at once"
r -H 'X-ClickHouse-User: locked' "$A/?query=SELECT+1"; eq "$code" "403" "a key missing for a password user"
r -u far: "$A/?query=SELECT+1"; eq "$code" "403" "a user outside its networks"
has "$body" "may not connect from 127.0.0.1" "says why"
r "$A/?query=SELECT+currentUser()"; eq "$body" "default" "no credentials: default"
r -u reader: --data-binary "SYSTEM DROP PAGE CACHE" "$A/"; eq "$(header X-ClickHouse-Exception-Code)" "164" "a readonly profile refuses writes"
r -u reader: "$A/?query=SELECT+1&max_threads=1"; eq "$(header X-ClickHouse-Exception-Code)" "164" "and setting changes"
r -u reader: "$A/?query=SELECT+value+FROM+system.settings+WHERE+name='max_memory_usage'"; eq "$body" "1000000" "the profile's max_memory_usage"
pw2=$(printf %s 'x' | sha256sum | cut -d' ' -f1)
printf '[user default]\npassword_sha256_hex = %s\n' "$pw2" >"$tmp/users2"
start auth2 --users "$tmp/users2"
r "http://127.0.0.1:$port_auth2/?query=SELECT+1"
eq "$code $(header X-ClickHouse-Exception-Code)" "401 194" "no credentials for a default with a password: 401 REQUIRED_PASSWORD"
has "$head" 'WWW-Authenticate: Basic realm="ClickHouse server HTTP API"' "with WWW-Authenticate"
printf '[user bad]\nnetworks = nowhere\n' >"$tmp/users3"
"$bin" server --port 0 --users "$tmp/users3" >"$tmp/bad.log" 2>&1
eq "$?" "1" "a bad users file is refused at start"
has "$(cat "$tmp/bad.log")" "'nowhere' in networks is not an address" "saying which line and why"

# ---- options: --version, --help, a config file; logfmt logs ----------------------------------
has "$("$bin" server --version)" "ringcache server " "--version"
has "$("$bin" server --help)" "--max-concurrent-queries N" "--help lists the options"
printf 'display-name = from-the-file\nmax-concurrent-queries = 3\n' >"$tmp/server.conf"
start cfg --config "$tmp/server.conf"
r "http://127.0.0.1:$port_cfg/?query=SELECT+1"
eq "$(header X-ClickHouse-Server-Display-Name)" "from-the-file" "a config file's key"
printf 'max-concurent-queries = 3\n' >"$tmp/bad.conf"
"$bin" server --port 0 --config "$tmp/bad.conf" >"$tmp/badconf.log" 2>&1
eq "$?" "2" "an unknown key in the config file is refused"
has "$(cat "$tmp/badconf.log")" "max-concurent-queries" "naming the key"
r "$U/?query_id=my-q-bad&query=SELEC+1"
grep -qE '^ts=[0-9T:.-]+Z? level=info msg="query failed" query_id=my-q-bad code=62 name=SYNTAX_ERROR' "$tmp/main.log" &&
  ok "logfmt log lines with the query id" || fail "no logfmt line for my-q-bad in $(tail -3 "$tmp/main.log")"

# ---- SIGTERM: the running query finishes, then exit 0 ----------------------------------------
curl -s -o "$tmp/drain" "$U/?query=SELECT+count()+FROM+numbers(1000000000)&max_threads=1" &
bgp=$!
pids+=($bgp)
for _ in $(seq 100); do
  r "$U/?query=SELECT+count()+FROM+system.processes+WHERE+query+LIKE+'%25numbers(1000000000)%25'"
  [[ $body == 1 ]] && break
  sleep 0.05
done
kill -TERM "$pid_main"
wait "$pid_main"
eq "$?" "0" "SIGTERM: exit 0 after the drain"
wait "$bgp"
eq "$(cat "$tmp/drain")" "1000000000" "the running query finished first"
for p in auth auth2 cfg; do
  v=pid_$p
  kill -TERM "${!v}"; wait "${!v}"; eq "$?" "0" "$p exits 0"
done

if ((fails)); then
  echo "--- server log:" >&2
  tail -30 "$tmp/main.log" >&2
  exit 1
fi
echo "all passed"
