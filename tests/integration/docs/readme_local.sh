#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# readme_local.sh: runs the README's "Three nodes on this machine" block as
# pasted, with two substitutions only: its folder (/tmp/ringcache-local)
# becomes a temp folder, and build/release/ the build under test. Then checks
# what the README says: both queries print 100000 100000 and read every byte
# from the cache nodes, stats answers for 3 of 3 nodes with two fills, the
# admin port serves ringcached_build_info, and every node drained and exited
# 0 on the block's kill. Its fixed ports become free ones. Everything the block starts is in a process group of
# its own, killed on exit whatever happened.
set -uo pipefail
shopt -s nullglob
src=${RINGCACHE_SOURCE_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)}
build=${RINGCACHE_BUILD_DIR:-$src/build/release}
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; echo "--- the block's output:"; cat "$work/out" 2>/dev/null
         for f in "$work"/local/*.log; do echo "--- $f"; tail -5 "$f"; done; exit 1; }

command -v node >/dev/null || skip "node is not installed (the block starts the npm S3 server)"
[[ -d ${RINGCACHE_NODE_MODULES:-$src/node_modules}/s3rver ]] || skip "npm s3rver is not installed (scripts/setup.sh)"

work=$(mktemp -d /tmp/test_readme_local.XXXXXX)
pgid=""
cleanup() {
  [[ -n $pgid ]] && kill -KILL -- "-$pgid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# the block: from the heading to the end of its first ```sh fence
awk '/^### Three nodes on this machine/ {h = 1}
     h && /^```sh$/ {b = 1; next}
     b && /^```$/ {exit}
     b {print}' "$src/README.md" > "$work/block.sh"
[[ -s $work/block.sh ]] || fail "README.md has no \"Three nodes on this machine\" block"
grep -q 'build/release/' "$work/block.sh" || fail "the block names no build/release/ binary"
sed -i "s#/tmp/ringcache-local#$work/local#g; s#build/release/#$build/#g" "$work/block.sh"
# the block's fixed ports (what a newcomer types: 9000 for S3, 7070-7072 and
# 9070-9072 for the nodes, some written 707$i) become ports free here, so the
# test never meets another process's port: a base with three free ports in a
# row for each range, found by binding them, released just before the start
ports=$(python3 -c 'import random, socket
def run(n):
    for _ in range(200):
        b = random.randint(20000, 60000)
        ss = []
        try:
            for k in range(n):
                s = socket.socket(); s.bind(("127.0.0.1", b + k)); ss.append(s)
            return b
        except OSError:
            pass
        finally:
            for s in ss: s.close()
    raise SystemExit(1)
print(run(1), run(3), run(3))') || fail "cannot find free ports"
read -r s3p n7 n9 <<< "$ports"
for p in 9000 7070 707 907; do
  grep -q "$p" "$work/block.sh" || fail "the block no longer uses port $p: update this test"
done
sed -i "s#707\$i#\$(($n7 + i))#g; s#907\$i#\$(($n9 + i))#g; s#\b9000\b#$s3p#g
        s#\b7070\b#$n7#g; s#\b7071\b#$((n7 + 1))#g; s#\b7072\b#$((n7 + 2))#g
        s#\b9070\b#$n9#g" "$work/block.sh"

cd "$src" || exit 1
setsid bash "$work/block.sh" > "$work/out" 2>&1 &
pid=$!
pgid=$pid
for _ in $(seq 1500); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "the block did not finish within 150 s"
wait "$pid"
st=$?
pgid=""
[[ $st -eq 0 ]] || fail "the block exited $st"

out=$work/out
[[ $(grep -c $'^100000\t100000$' "$out") -eq 2 ]] || fail "the two queries did not print 100000 100000"
[[ $(grep -c '^Read through the cache: 1.68 MB from cache nodes, 0 B from S3 directly.$' "$out") -eq 2 ]] ||
  fail "the queries did not read every byte from the cache nodes"
grep -Eq '^TOTAL +3/3 .* 2 +2 +2 +2 ' "$out" || fail "stats: not 3/3 nodes with two hits, two misses, two blocks, two fills"
grep -q '^ringcached_build_info{' "$out" || fail "the admin port did not serve ringcached_build_info"
grep -q 'warning' "$out" && fail "a warning was printed"
for i in 0 1 2; do
  grep -q 'msg="drained"' "$work/local/n$i.log" || fail "node n$i did not drain on SIGTERM"
done
echo "the README's three-node block works as pasted"
