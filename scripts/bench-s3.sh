#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# bench-s3.sh: the S3 client's benchmark (bench/s3/s3_bench.c): parallel vs
# single-stream GET through the S3 model, 64 KiB ranged GETs vs curl, and the S3
# model's ceiling. Installs what is missing, builds Release, runs. Extra
# arguments go to s3_bench (--size-mib, --reps, --ranges, --parallel).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DRINGCACHE_WERROR=ON >/dev/null
cmake --build build/release -j "$(nproc)" --target s3_bench s3model s3model_bench >/dev/null
export RINGCACHE_BUILD_DIR=$PWD/build/release RINGCACHE_SOURCE_DIR=$PWD \
       RINGCACHE_NODE_MODULES=$PWD/node_modules
exec build/release/bench/s3/s3_bench "$@"
