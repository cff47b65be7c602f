#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# demo.sh: the README's main job. On loopback: a real S3 server (npm s3rver)
# behind the S3 model (30 ms first byte, 100 MiB/s per connection, like S3 in a
# region), three ringcached nodes, generated data; reads every object cold and
# then warm through the cache, checks the bytes, and prints the two times and
# the S3 requests each pass cost. Everything it starts is stopped, and its temp
# folder removed, on exit or Ctrl-C.
#
#   bash scripts/demo.sh [--objects N (8)] [--object-mib M (32)] [--nodes K (3)]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

objects=8 object_mib=32 nodes=3
while (($#)); do
  case $1 in
    --objects) objects=$2; shift 2 ;;
    --object-mib) object_mib=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    -h|--help) sed -n '3,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

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
  for _ in $(seq 200); do
    [[ -s $1 ]] && { cat "$1"; return 0; }
    kill -0 "$2" 2>/dev/null || { echo "demo: $3 exited early:" >&2; tail -20 "$work/$3.log" >&2; exit 1; }
    sleep 0.05
  done
  echo "demo: $3 did not start within 10 s" >&2; tail -20 "$work/$3.log" >&2; exit 1
}

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
echo "generating $objects objects of $object_mib MiB and uploading them to S3 ..."
mkdir -p "$work/data"
for i in $(seq -f '%03g' 1 "$objects"); do
  head -c $((object_mib * 1048576)) /dev/urandom > "$work/data/part-$i.bin"
  "$bin/ingest/cli/ringcache" put "$work/data/part-$i.bin" "s3://$bucket/demo/part-$i.bin" \
    --endpoint "http://127.0.0.1:$s3port" >/dev/null
done

members=""
for n in $(seq 0 $((nodes - 1))); do
  mkdir -p "$work/node$n"
  "$bin/cached/ringcached" --node-id "ringcache-$n" --listen 127.0.0.1 --port 0 \
    --port-file "$work/node$n.port" --admin-listen 127.0.0.1 --admin-port 0 \
    --admin-port-file "$work/node$n.admin" --data-dir "$work/node$n" --ssd-capacity 2GiB \
    --ram-capacity 256MiB --threads 2 --no-sync --s3-endpoint "http://127.0.0.1:$mport" \
    > "$work/node$n.log" 2>&1 &
  pids+=($!); p=$(wait_port "$work/node$n.port" $! "node$n")
  members+="${members:+,}ringcache-$n=127.0.0.1:$p"
done
echo "cluster: $members"

s3_gets() { curl -s "http://127.0.0.1:$madmin/count?method=GET"; }
pass() { # name
  curl -s "http://127.0.0.1:$madmin/reset" >/dev/null
  local t0 t1
  t0=$(date +%s.%N)
  for f in "$work"/data/*.bin; do
    name=$(basename "$f")
    # streamed and compared as it arrives: no temporary copy on disk
    "$bin/ingest/cli/ringcache" cat "s3://$bucket/demo/$name" --cache "$members" | cmp -s - "$f" \
      || { echo "demo: $name read through the cache differs from S3" >&2; exit 1; }
  done
  t1=$(date +%s.%N)
  local secs gets
  secs=$(echo "$t1 - $t0" | bc -l)
  gets=$(s3_gets)
  printf '| %-5s | %6.2f s | %7.1f MiB/s | %5s |\n' "$1" "$secs" \
    "$(echo "$objects * $object_mib / $secs" | bc -l)" "$gets"
}

total=$((objects * object_mib))
echo
echo "reading $total MiB through $nodes cache nodes (S3 behind 30 ms latency, 100 MiB/s per connection)"
echo
echo "| pass  | time     | throughput    | S3 GETs |"
echo "|-------|----------|---------------|---------|"
pass cold
pass warm
echo
echo "bytes checked against the originals; cold pass = one S3 GET per 1 MiB block,"
echo "warm pass = served from the cache nodes' RAM/SSD."
