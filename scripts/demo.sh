#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# demo.sh: the README's main job, on loopback. A real S3 server (npm s3rver)
# behind the S3 model (30 ms first byte, 100 MiB/s per connection, like S3 in a
# region), three ringcached nodes, and one long-lived `ringcache server` (the
# compute node, ClickHouse's HTTP interface) reading through them. On generated
# Stack-Overflow-shaped Parquet it runs, each answer checked:
#   - the seed query cold (the nodes fill from S3) and hot (the server's RAM);
#   - a scan of every column cold, then with the page cache dropped (served by
#     the cache nodes), then hot;
#   - INSERT INTO a MergeTree table on S3, written through the cache, and the
#     same scan on the table, with the S3 GETs it cost.
# Each step prints its time, MB/s of decoded data and S3 GETs. Everything it
# starts is stopped, and its temp folder removed, on exit or Ctrl-C.
#
#   bash scripts/demo.sh [--rows N (2000000)] [--nodes K (3)]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

rows=2000000 nodes=3
while (($#)); do
  case $1 in
    --rows) rows=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    -h|--help) sed -n '3,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ $rows =~ ^[0-9]+$ && $rows -ge 10000 ]] || { echo "demo.sh: --rows takes a number >= 10000" >&2; exit 2; }
[[ $nodes =~ ^[0-9]+$ && $nodes -ge 1 && $nodes -le 9 ]] || { echo "demo.sh: --nodes takes 1 to 9" >&2; exit 2; }

bash scripts/setup.sh >/dev/null
bin=${RINGCACHE_DEMO_BUILD:-$root/build/release}
if [[ -z ${RINGCACHE_DEMO_BUILD:-} ]]; then
  echo "building (Release) ..."
  cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DRINGCACHE_WERROR=ON >/dev/null
  cmake --build build/release -j "$(nproc)" --target ringcached ringcache s3model >/dev/null
fi

work=$(mktemp -d /tmp/ringcache-demo.XXXXXX)
pids=()
cleanup() {
  trap - EXIT INT TERM
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'echo; echo "interrupted: stopping everything"; exit 130' INT TERM

wait_port() { # file, pid, name
  for _ in $(seq 300); do
    [[ -s $1 ]] && { cat "$1"; return 0; }
    kill -0 "$2" 2>/dev/null || { echo "demo: $3 exited early:" >&2; tail -20 "$work/$3.log" >&2; exit 1; }
    sleep 0.05
  done
  echo "demo: $3 did not start within 15 s" >&2; tail -20 "$work/$3.log" >&2; exit 1
}
fail() { echo "demo: $*" >&2; exit 1; }

bucket=ringcache-demo
NODE_OPTIONS=--openssl-legacy-provider node tests/harness/s3server.js \
  --node-modules "$root/node_modules" --version 3 --dir "$work/s3" \
  --port-file "$work/s3.port" --bucket "$bucket" > "$work/s3rver.log" 2>&1 &
pids+=($!); s3port=$(wait_port "$work/s3.port" $! s3rver)

"$bin/bench/s3model/s3model" --upstream "127.0.0.1:$s3port" --port 0 \
  --port-file "$work/model.port" --admin-port 0 --admin-port-file "$work/model.admin" \
  > "$work/s3model.log" 2>&1 &
pids+=($!); mport=$(wait_port "$work/model.port" $! s3model)
madmin=$(wait_port "$work/model.admin" "${pids[-1]}" s3model)

export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
echo "generating $rows Stack-Overflow-shaped rows of Parquet (DuckDB) and uploading them ..."
RINGCACHE_NODE_MODULES=$root/node_modules node bench/engine/bench_gen.mjs "$work/gen" "$rows" 0 \
  2> "$work/gen.log" || { tail -5 "$work/gen.log" >&2; fail "the data generator failed"; }
# two copies: one for the seed query, one that the scans then read cold
for f in "$work"/gen/data/posts_*.parquet; do
  for prefix in posts scan; do
    "$bin/ingest/cli/ringcache" put "$f" "s3://$bucket/$prefix/$(basename "$f")" \
      --endpoint "http://127.0.0.1:$s3port" >/dev/null
  done
done

# the nodes know each other (--members), so that a node taking a write places each block on
# its owner; their ports are picked first, free ones
ports=$(python3 -c 'import socket, sys
ss = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))' "$nodes")
read -r -a port <<< "$ports"
members=""
for n in $(seq 0 $((nodes - 1))); do members+="${members:+,}ringcache-$n=127.0.0.1:${port[$n]}"; done
for n in $(seq 0 $((nodes - 1))); do
  mkdir -p "$work/node$n"
  "$bin/cached/ringcached" --node-id "ringcache-$n" --listen 127.0.0.1 --port "${port[$n]}" \
    --port-file "$work/node$n.port" --members "$members" --admin-listen 127.0.0.1 --admin-port 0 \
    --admin-port-file "$work/node$n.admin" --data-dir "$work/node$n" --ssd-capacity 2GiB \
    --ram-capacity 512MiB --threads 2 --no-sync --s3-endpoint "http://127.0.0.1:$mport" \
    > "$work/node$n.log" 2>&1 &
  pids+=($!); wait_port "$work/node$n.port" $! "node$n" >/dev/null
done
"$bin/ingest/cli/ringcache" server --http-port 0 --port-file "$work/server.port" \
  --cache "$members" --warehouse "s3://$bucket/wh/" --s3-endpoint "http://127.0.0.1:$mport" \
  --page-cache 1GiB --background-merges false --log-level warn > "$work/server.log" 2>&1 &
pids+=($!); sport=$(wait_port "$work/server.port" $! server)
echo "cache nodes: $members; ringcache server on http://127.0.0.1:$sport"

# one statement through the server: the answer in $work/out, the summary's
# read_bytes in $bytes, the seconds in $secs, S3's GETs during it in $gets
q() {
  curl -s "http://127.0.0.1:$madmin/reset" >/dev/null
  local code
  code=$(curl -s -o "$work/out" -D "$work/head" -w '%{http_code} %{time_total}' \
    --data-binary "$1" "http://127.0.0.1:$sport/?default_format=TSV&max_threads=2")
  secs=${code#* }
  [[ ${code%% *} == 200 ]] || fail "the server answered ${code%% *} to: $1: $(head -c 400 "$work/out")"
  bytes=$(sed -n 's/.*"read_bytes":"\{0,1\}\([0-9]*\).*/\1/p' "$work/head" | head -1)
  gets=$(curl -s "http://127.0.0.1:$madmin/count?method=GET")
  lists=$(( $(curl -s "http://127.0.0.1:$madmin/count?method=GET&path=/$bucket") +
            $(curl -s "http://127.0.0.1:$madmin/count?method=GET&path=/$bucket/") ))
}
row() { # step
  printf '| %-44s | %7.3f s | %8.1f MB/s | %5s (%s) |\n' "$1" "$secs" \
    "$(echo "${bytes:-0} / 1000000 / $secs" | bc -l)" "$((gets - lists))" "$lists"
}
src="s3('s3://$bucket/posts/posts_*.parquet')"
seed="SELECT OwnerDisplayName, count() AS num_posts FROM $src WHERE OwnerDisplayName NOT IN ('', 'anon') GROUP BY OwnerDisplayName ORDER BY num_posts DESC, OwnerDisplayName LIMIT 5"
# every column, in integers (a sum of floats depends on the order of its terms)
scan_of() { echo "SELECT count(), sum(Id), sum(toInt64(Score * 10)), sum(ViewCount), sum(OwnerUserId), min(CreationDate), max(CreationDate), sum(PostTypeId), sum(length(Title)), sum(length(Body)), sum(length(Tags)), uniqExact(OwnerDisplayName) FROM $1"; }
scan_src="s3('s3://$bucket/scan/posts_*.parquet')"

echo
echo "| step                                         | time      | decoded data  | S3 GETs (LISTs) |"
echo "|----------------------------------------------|-----------|---------------|-----------------|"
q "$seed";                       row "seed query, cold (the nodes fill from S3)";   cp "$work/out" "$work/seed1"
q "$seed";                       row "seed query, hot (the server's page cache)";   cmp -s "$work/out" "$work/seed1" || fail "the hot seed query answered differently"
[[ $((gets - lists)) -eq 0 ]] || fail "the hot seed query cost S3 $((gets - lists)) GETs of objects"
q "$(scan_of "$scan_src")";           row "every column, cold";                           cp "$work/out" "$work/scan1"
[[ $(cut -f1 "$work/scan1") -eq $rows ]] || fail "the scan counted $(cut -f1 "$work/scan1") rows, not $rows"
q "SYSTEM DROP PAGE CACHE"
q "$(scan_of "$scan_src")";           row "every column, warm cache nodes (RAM dropped)"; cmp -s "$work/out" "$work/scan1" || fail "the warm scan answered differently: $(cat "$work/out") where the cold scan said $(cat "$work/scan1")"
[[ $((gets - lists)) -eq 0 ]] || fail "the warm scan cost S3 $((gets - lists)) GETs of objects"
q "$(scan_of "$scan_src")";           row "every column, hot (the server's page cache)"; cmp -s "$work/out" "$work/scan1" || fail "the hot scan answered differently: $(cat "$work/out") where the cold scan said $(cat "$work/scan1")"
q "CREATE TABLE posts (Id Int64, PostTypeId Int32, CreationDate DateTime64(6), Score Float64, ViewCount Nullable(Int32), OwnerUserId Nullable(Int64), OwnerDisplayName String, Tags String, Title String, Body String) ENGINE = MergeTree ORDER BY (PostTypeId, CreationDate)"
q "INSERT INTO posts SELECT * FROM $scan_src SETTINGS max_insert_threads = 2, min_insert_block_size_rows = 0, min_insert_block_size_bytes = 67108864"
row "INSERT INTO posts SELECT * (write-through)"
q "$(scan_of posts)";            row "every column of the table, right after";      cmp -s "$work/out" "$work/scan1" || fail "the table answered differently from its source files"
table_gets=$((gets - lists))
echo
echo "Every answer was checked: the hot and warm runs against the cold ones, the row count"
echo "against the $rows generated, the table against the files it was loaded from."
echo "Cold = each 1 MiB block fetched from S3 once, by its owner node; warm = served by the"
echo "cache nodes' RAM/SSD; hot = the server's own page cache. Every query lists the files in"
echo "S3 (the LISTs: a glob is expanded at query time)."
if ((table_gets == 0)); then
  echo "The scan of the table cost S3 no GET: the server made the INSERT's commit itself, so it"
  echo "knew the table's log, and the parts came from the cache nodes, written there by the INSERT."
elif ((table_gets <= 3)); then
  echo "The scan of the table cost S3 $table_gets GETs (its commit log's): the parts came from the"
  echo "cache nodes, written there by the INSERT."
else
  echo "The scan of the table cost S3 $table_gets GETs: through the server, the parts the INSERT"
  echo "wrote are read back from S3, not from the cache nodes (the CLI's INSERT places them on the"
  echo "nodes; the server's does not yet)."
fi
