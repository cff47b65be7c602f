#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_tiny.sh: runs the cold-versus-warm benchmark at the tiny scale (label
# slow) and checks what can be checked without timing: the table and its files
# are produced, every set-up has a row, the first load cost S3 exactly one GET
# per block, a second compute node on the warm cache cost none, and six cold
# compute nodes at once cost one GET per block, not six. The engine's seed
# query has its table (coldwarm itself fails when its answer differs between
# set-ups), and on the second compute node it asks S3 for the listing only.
# The post's table (coldwarm_table.mjs: it fails itself when a set-up's
# answer differs from the local files'): every set-up has a row, the first
# load through cold cache nodes reads each block of the parts from S3 once,
# the second server on the warm nodes reads none of them, and six servers on
# cold nodes at once cost one GET per block of the parts.
set -euo pipefail
bin=$1
command -v nginx >/dev/null || { echo "SKIP: nginx is not installed"; exit 77; }
command -v iperf3 >/dev/null || { echo "SKIP: iperf3 is not installed"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$bin" --scale tiny --out "$out" --bandwidth-mib 200 | tee "$out/stdout"
md=$out/coldwarm-tiny.md
[[ -s $md ]] || { echo "FAIL: no table written"; exit 1; }
for row in "S3 directly" "nginx slice cache" "1 local disk" "2 local cache node" \
           "3 distributed, first load" "4 distributed, second node" "5 six compute nodes"; do
  grep -q "| $row" "$md" || { echo "FAIL: no row '$row'"; exit 1; }
done
blocks=16   # tiny: 4 objects x 4 MiB in 1 MiB blocks
first=$(grep '| 3 distributed, first load' "$md" | head -1 | awk -F'|' '{print $6}' | awk '{print $1}')
second=$(grep '| 4 distributed, second node' "$md" | head -1 | awk -F'|' '{print $6}' | awk '{print $1}')
[[ $first == "$blocks" ]] || { echo "FAIL: first load cost $first S3 GETs, not $blocks"; exit 1; }
[[ $second == 0 ]] || { echo "FAIL: the second compute node cost $second S3 GETs, not 0"; exit 1; }
for row in "S3 directly" "1 local disk" "2 local cache node" "3 distributed, first load" \
           "4 distributed, second node"; do
  [[ $(grep -c "| $row" "$md") == 2 ]] || { echo "FAIL: no seed-query row '$row'"; exit 1; }
done
qhot=$(grep '| 4 distributed, second node' "$md" | tail -1 | awk -F'|' '{print $5}' | awk '{print $3}')
[[ $qhot == 1 ]] || { echo "FAIL: the seed query on the second node made $qhot S3 GETs, not 1 (the LIST)"; exit 1; }
for row in "local Parquet files" "1 S3 directly" "2 cache nodes cold" "3 cache nodes warm" \
           "4 a second server" "5 six servers at once"; do
  grep -q "| $row" "$md" || { echo "FAIL: no table row '$row'"; exit 1; }
done
tblocks=$(grep -o "the parts' objects [0-9]* blocks" "$md" | awk '{print $4}')
tfirst=$(grep '| 2 cache nodes cold' "$md" | awk -F'|' '{print $3}' | sed -E 's/.*\(([0-9]+) of parts\).*/\1/')
tsecond=$(grep '| 4 a second server' "$md" | awk -F'|' '{print $3}' | sed -E 's/.*\(([0-9]+) of parts\).*/\1/')
[[ -n $tblocks && $tfirst == "$tblocks" ]] || { echo "FAIL: the table's first load cost $tfirst GETs of parts, not $tblocks"; exit 1; }
[[ $tsecond == 0 ]] || { echo "FAIL: the second server cost $tsecond GETs of parts, not 0"; exit 1; }
tline=$(grep '^coldwarm-table: ' "$out/stdout" | tail -1)
[[ -n $tline ]] || { echo "FAIL: no coldwarm-table line"; exit 1; }
tper=$(sed -E 's/.*six_servers_s3_gets_per_block=([0-9.]+).*/\1/' <<<"$tline")
[[ $tper == 1.00 ]] || { echo "FAIL: six servers on cold nodes cost $tper GETs per block of the parts, not 1"; exit 1; }
grep -q '^coldwarm-query: ' "$out/stdout" || { echo "FAIL: no coldwarm-query line"; exit 1; }
line=$(tail -1 "$out/stdout")
[[ $line == coldwarm:* ]] || { echo "FAIL: no summary line"; exit 1; }
per=$(sed -E 's/.*s3_gets_six_cold_per_block=([0-9.]+).*/\1/' <<<"$line")
[[ $per == 1.00 ]] || { echo "FAIL: six cold compute nodes cost $per S3 GETs per block, not 1"; exit 1; }
echo "1 passed, 0 failed"
