#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# setup.sh: installs what ringcache needs to build, test and benchmark on a Debian
# 12 machine, as root: the Debian packages (compilers, libraries, tools) and the
# npm test tools pinned in package.json / package-lock.json. Safe to run again:
# it installs only what is missing, and `npm ci` only when node_modules does not
# match the lock file.
set -euo pipefail
cd "$(dirname "$0")/.."

DEBS=(
  build-essential cmake pkg-config git ca-certificates
  clang libclang-rt-14-dev
  libevent-dev libcurl4-openssl-dev libssl-dev libxxhash-dev libexpat1-dev
  librocksdb-dev liburing-dev libcmocka-dev
  libzstd-dev liblz4-dev libsnappy-dev zlib1g-dev
  libhttp-parser-dev
  curl bc gnuplot-nox nginx iperf3 wrk awscli python3-boto3
  golang-go golang-github-masterminds-sprig-dev golang-github-masterminds-semver-dev
  golang-github-xeipuuv-gojsonschema-dev golang-gopkg-yaml.v2-dev golang-gopkg-yaml.v3-dev
  yamllint
)

missing=()
for p in "${DEBS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ! command -v node >/dev/null 2>&1; then missing+=(nodejs); fi
if ! command -v npm >/dev/null 2>&1; then missing+=(npm); fi

if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: missing Debian packages: ${missing[*]}; run as root (or install them) and retry" >&2
    exit 1
  fi
  echo "setup: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: Debian packages present"
fi

# npm tools: reinstall only when the lock file changed since the last install.
stamp=node_modules/.ringcache-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
  echo "setup: installing npm test tools (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$want" > "$stamp"
else
  echo "setup: npm test tools present"
fi
