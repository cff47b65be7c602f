#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# bench.sh: runs one benchmark of bench/ the way the README's figures were
# measured: installs what is missing, builds Release, runs it with the paths it
# needs. Each prints a table and a last summary line.
#
#   bash scripts/bench.sh NAME [args...]
#   NAME: s3 | cached | ring | pagecache | blockstore | parquet | client | s3model | coldwarm | engine
#         | http | table | tables | threads | insert | s3api | server | sqlfn | netcopy
set -euo pipefail
cd "$(dirname "$0")/.."
declare -A bins=(
  [s3]=bench/s3/s3_bench [cached]=bench/cached/cached_bench [ring]=bench/ring/ring_bench
  [pagecache]=bench/pagecache/pagecache_bench [blockstore]=bench/blockstore/blockstore_bench
  [parquet]=bench/parquet/parquet_bench [client]=bench/client/client_bench
  [s3model]=bench/s3model/s3model_bench [coldwarm]=bench/coldwarm/coldwarm
  [engine]=bench/engine/engine_bench [http]=bench/http/http_bench
  [netcopy]=bench/netcopy/netcopy_bench
  [table]=bench/table/table_bench [tables]=bench/tables/tables_bench
  [threads]=bench/threads/threads_bench [insert]=bench/insert/insert_bench
  [s3api]=bench/s3api/s3api_bench [server]=bench/server/server_bench.mjs
  [sqlfn]=bench/engine/sqlfn_bench)
name=${1:-}
if [[ -z $name || -z ${bins[$name]:-} ]]; then
  echo "usage: bash scripts/bench.sh NAME [args...]; NAME is one of: ${!bins[*]}" >&2
  exit 2
fi
shift
bash scripts/setup.sh >/dev/null
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DRINGCACHE_WERROR=ON >/dev/null
bin=${bins[$name]}
target=$(basename "$bin")
[[ $bin == *.mjs ]] && target=ringcache # a Node script: it runs the built programs
cmake --build build/release -j "$(nproc)" --target "$target" ringcached s3model \
  ringcache >/dev/null
export RINGCACHE_BUILD_DIR=$PWD/build/release RINGCACHE_SOURCE_DIR=$PWD \
       RINGCACHE_NODE_MODULES=$PWD/node_modules
[[ $bin == *.mjs ]] && exec node "$bin" "$@"
exec "build/release/$bin" "$@"
