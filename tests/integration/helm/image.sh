#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_helm_image (label slow): builds helm/Dockerfile with helm/image/build.sh
# (podman; a debootstrapped Debian 12 base when RINGCACHE_IMAGE_BASE names
# none) and runs the image as the chart's StatefulSet runs it: the chart's
# rendered ringcached.conf mounted read-only at /etc/ringcache/config, a
# read-only root filesystem with /tmp on tmpfs, every capability dropped, no
# new privileges, the image's own user (the chart's runAsUser) on a data folder
# it owns, --node-id ringcache-0. Flags override only what cannot work here
# (addresses, ports, the members, the sizes, the S3 endpoint), as in the chart
# check. Against the test S3 server, the host's ringcache CLI reads a 3-block
# object through the node twice: the bytes must match, the first read must
# make 3 fills and the second 3 hits, and SIGTERM must end the container with
# exit 0 after "drained". Done twice: under podman's default seccomp profile
# (the node must come up on whichever disk I/O it gets) and under the chart's
# files/ringcached-io-uring.json (the node must log io=io_uring, and unshare
# must be refused inside). Removes the containers and images it made, and the
# base when it made one. Exit 77 (skipped) without root, podman, debootstrap
# (when it must make a base), the renderer's Go packages, or a built ringcache.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=${RINGCACHE_SOURCE_DIR:-$(cd "$here/../../.." && pwd)}
build=${RINGCACHE_BUILD_DIR:-$src/build/release}
nm=${RINGCACHE_NODE_MODULES:-$src/node_modules}
. "$here/renderer.sh"
. "$src/helm/image/engine.sh"

skip() { echo "SKIP: $*" >&2; exit 77; }
[[ $(id -u) -eq 0 ]] || skip "rootful podman and debootstrap need root"
command -v podman >/dev/null || skip "podman not found (Debian packages podman and runc)"
[[ -n ${RINGCACHE_IMAGE_BASE:-} ]] || command -v debootstrap >/dev/null \
  || skip "debootstrap not found (Debian package debootstrap), and RINGCACHE_IMAGE_BASE names no Debian 12 image"
why=$(renderer_check) || skip "$why"
cli=$build/ingest/cli/ringcache
[[ -x $cli ]] || skip "the ringcache CLI is not built ($cli)"
command -v curl >/dev/null || skip "curl not found (Debian package curl)"
[[ -f $nm/s3rver/package.json ]] || skip "npm s3rver not in $nm (run scripts/setup.sh)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_helm_image.XXXXXX")
id=ctest-$$
image=localhost/ringcache:$id
base=${RINGCACHE_IMAGE_BASE:-}
made_base=
s3_pid=
containers=()
cleanup() {
  local c
  for c in "${containers[@]}"; do "${ENGINE[@]:-podman}" rm -f "$c" >/dev/null 2>&1; done
  podman rmi -f "$image" >/dev/null 2>&1
  [[ -n $made_base ]] && podman rmi -f "$made_base" >/dev/null 2>&1
  if [[ -n $s3_pid ]]; then kill "$s3_pid" 2>/dev/null; wait "$s3_pid" 2>/dev/null; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# ---- the image ------------------------------------------------------------------
args=(--tag "$image")
if [[ -n $base ]]; then
  args+=(--base "$base")
else
  made_base=localhost/ringcache-base:$id
  args+=(--base-tag "$made_base")
fi
if ! bash "$src/helm/image/build.sh" "${args[@]}" >"$tmp/build.log" 2>&1; then
  tail -30 "$tmp/build.log" >&2
  echo "FAIL: helm/image/build.sh failed (the log's end is above)" >&2
  exit 1
fi
grep 'build.sh: built' "$tmp/build.log"
grep -q '^runtime packages: .*libevent-2.1-7' "$tmp/build.log" || fail "the build stage did not derive the runtime packages (libevent-2.1-7 among them)"
engine_init "$image" || { echo "FAIL: the built image does not start" >&2; exit 1; }
uid=$(sed -n 's/^runAsUser: //p' "$src/helm/ringcache/values.yaml")
[[ $(podman image inspect --format '{{.Config.User}}' "$image") == "$uid:$uid" ]] \
  || fail "the image's user is $(podman image inspect --format '{{.Config.User}}' "$image"), not the chart's runAsUser $uid:$uid"

# ---- the chart's config ----------------------------------------------------------
renderer_build "$src" "$tmp" || { echo "FAIL: the renderer does not build" >&2; exit 1; }
"$tmp/render" -chart "$src/helm/ringcache" -json "$tmp/objects.json" >/dev/null || { echo "FAIL: the chart does not render" >&2; exit 1; }
mkdir -p "$tmp/config"
node -e '
  const fs = require("fs");
  const objs = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
  fs.writeFileSync(process.argv[2], objs.find((o) => o.kind === "ConfigMap").data["ringcached.conf"]);
' "$tmp/objects.json" "$tmp/config/ringcached.conf" || { echo "FAIL: no ringcached.conf in the rendering" >&2; exit 1; }

# ---- the test S3 server and an object of 3 blocks (1 MiB each) ---------------
mkdir -p "$tmp/s3"
NODE_OPTIONS=--openssl-legacy-provider node "$src/tests/harness/s3server.js" --node-modules "$nm" --version 3 \
  --dir "$tmp/s3" --port-file "$tmp/s3.port" --bucket ringcache-image >"$tmp/s3.log" 2>&1 &
s3_pid=$!
for _ in $(seq 100); do [[ -s $tmp/s3.port ]] && break; sleep 0.1; done
[[ -s $tmp/s3.port ]] || { echo "FAIL: the S3 server did not start: $(tail -3 "$tmp/s3.log")" >&2; exit 1; }
endpoint=http://127.0.0.1:$(cat "$tmp/s3.port")
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
head -c $((3 * 1048576 - 12345)) /dev/urandom >"$tmp/object"
"$cli" put "$tmp/object" s3://ringcache-image/object --endpoint "$endpoint" >/dev/null \
  || { echo "FAIL: cannot put the test object" >&2; exit 1; }

metric() { curl -fsS "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m { print $2 }'; }

# run NAME [podman run options...]: one node in the image, two reads through it
run() {
  local name=$1; shift
  local d=$tmp/$name c=ringcache-$id-$name
  mkdir -p "$d/data"
  chown "$uid:$uid" "$d/data"
  chmod 0750 "$d/data"
  containers+=("$c")
  if ! "${ENGINE[@]}" run -d --name "$c" --network host "${ENGINE_LIMITS[@]}" \
      --read-only --tmpfs /tmp --cap-drop ALL --security-opt no-new-privileges "$@" \
      -v "$tmp/config:/etc/ringcache/config:ro" -v "$d/data:/var/lib/ringcache" \
      -e AWS_ACCESS_KEY_ID -e AWS_SECRET_ACCESS_KEY \
      "$image" --config /etc/ringcache/config/ringcached.conf --node-id ringcache-0 \
      --listen 127.0.0.1 --port 0 --port-file /var/lib/ringcache/port \
      --admin-listen 127.0.0.1 --admin-port 0 --admin-port-file /var/lib/ringcache/admin-port \
      --members ringcache-0=127.0.0.1:1 --ssd-capacity 256MiB --ram-capacity 16MiB \
      --s3-endpoint "$endpoint" --s3-region us-east-1 >"$d/run.log" 2>&1; then
    fail "[$name] podman run: $(tail -3 "$d/run.log")"
    return
  fi
  local ready=
  for _ in $(seq 150); do
    "${ENGINE[@]}" logs "$c" 2>&1 | grep -q 'msg="ringcached ready"' && { ready=1; break; }
    [[ $("${ENGINE[@]}" inspect --format '{{.State.Running}}' "$c") == true ]] || break
    sleep 0.1
  done
  "${ENGINE[@]}" logs "$c" >"$d/log" 2>&1
  if [[ -z $ready ]]; then
    fail "[$name] ringcached in the image never became ready: $(tail -5 "$d/log")"
    return
  fi
  local port admin
  port=$(cat "$d/data/port")
  admin=$(cat "$d/data/admin-port")
  echo "[$name] $(grep -o 'msg="ringcached ready".*' "$d/log")"
  for i in 1 2; do
    "$cli" cat s3://ringcache-image/object --cache "ringcache-0=127.0.0.1:$port" --endpoint "$endpoint" >"$d/read$i" 2>"$d/read$i.err" \
      || fail "[$name] read $i through the node failed: $(cat "$d/read$i.err")"
    cmp -s "$tmp/object" "$d/read$i" || fail "[$name] read $i through the node returned other bytes"
    [[ $i == 1 ]] && { [[ $(metric "$admin" ringcached_s3_get_requests_total) == 3 ]] \
      || fail "[$name] the first read made $(metric "$admin" ringcached_s3_get_requests_total) fills, not 3 (did it go through the node?)"; }
  done
  [[ $(metric "$admin" ringcached_hits_total) == 3 ]] || fail "[$name] the second read made $(metric "$admin" ringcached_hits_total) hits, not 3"
  "${ENGINE[@]}" stop -t 30 "$c" >/dev/null
  "${ENGINE[@]}" logs "$c" >"$d/log" 2>&1
  local rc
  rc=$("${ENGINE[@]}" inspect --format '{{.State.ExitCode}}' "$c")
  [[ $rc == 0 ]] || fail "[$name] ringcached exited $rc on SIGTERM: $(tail -3 "$d/log")"
  grep -q 'msg="drained"' "$d/log" || fail "[$name] ringcached did not drain on SIGTERM"
  LAST_LOG=$d/log
}

run default-seccomp
echo "[default-seccomp] disk I/O: $(grep -o 'msg="block store open".* io=[a-z_]*' "${LAST_LOG:-/dev/null}" | grep -o 'io=[a-z_]*$')"
if [[ $(cat /proc/sys/kernel/io_uring_disabled 2>/dev/null || echo 0) == 0 ]]; then
  LAST_LOG=
  run io-uring-profile --security-opt "seccomp=$src/helm/ringcache/files/ringcached-io-uring.json"
  [[ -n $LAST_LOG ]] && { grep -q 'msg="block store open".* io=io_uring' "$LAST_LOG" \
    || fail "[io-uring-profile] the chart's seccomp profile does not give io_uring: $(grep -m1 'block store open\|io_uring' "$LAST_LOG")"; }
  if "${ENGINE[@]}" run --rm --network host "${ENGINE_LIMITS[@]}" --cap-drop ALL --security-opt no-new-privileges \
      --security-opt "seccomp=$src/helm/ringcache/files/ringcached-io-uring.json" --entrypoint /usr/bin/unshare "$image" -U true >/dev/null 2>&1; then
    fail "[io-uring-profile] unshare works under the chart's seccomp profile (it must deny it)"
  fi
else
  echo "note: io_uring is disabled on this host (/proc/sys/kernel/io_uring_disabled): the seccomp profile run is skipped" >&2
fi

if ((fails)); then
  echo "test_helm_image: $fails failure(s)" >&2
  exit 1
fi
echo "test_helm_image: ok (image built, run with the chart's config and pod security settings, 2 reads of 3 blocks through it, twice)"
