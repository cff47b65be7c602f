#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_helm_chart: checks helm/ringcache without helm. Builds the small Go
# renderer (helm/tools/render) offline, renders the chart for the default
# values and for every scenario in values/, lints each rendering with
# yamllint, validates every object with npm kubernetes-models and checks the
# chart's invariants (check.mjs); renders every file in bad/ and requires it
# to be refused with the message its `# expect:` line names; and, when
# ringcached is built, starts it on the rendered config, with the rendered
# Secrets' files in place of the mounts, to prove the daemon accepts every key
# and value (and, in the TLS scenario, serves TLS with the chart's Secret). Installs nothing: a missing tool exits 77
# (skipped) with the package to install. Writes only in a temp folder (the Go
# build cache too), removed on exit.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=${RINGCACHE_SOURCE_DIR:-$(cd "$here/../../.." && pwd)}
build=${RINGCACHE_BUILD_DIR:-}
nm=${RINGCACHE_NODE_MODULES:-$src/node_modules}
chart=$src/helm/ringcache
. "$here/renderer.sh"

skip() { echo "SKIP: $*" >&2; exit 77; }
why=$(renderer_check) || skip "$why"
command -v yamllint >/dev/null || skip "yamllint not found (Debian package yamllint)"
command -v node >/dev/null || skip "node not found (Debian package nodejs)"
command -v openssl >/dev/null || skip "openssl not found (Debian package openssl)"
[[ -f $nm/kubernetes-models/package.json ]] || skip "npm kubernetes-models not in $nm (run scripts/setup.sh)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_helm_chart.XXXXXX")
daemon_pid=
cleanup() {
  if [[ -n $daemon_pid ]]; then kill -KILL "$daemon_pid" 2>/dev/null; wait "$daemon_pid" 2>/dev/null; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# ---- the renderer: GOPATH mode, Debian's Go sources, no network ------------
renderer_build "$src" "$tmp" || { echo "FAIL: the renderer does not build" >&2; exit 1; }
# check.mjs resolves kubernetes-models from next to itself.
cp "$here/check.mjs" "$tmp/check.mjs"
ln -s "$nm" "$tmp/node_modules"

# ---- a throwaway self-signed certificate for the TLS scenario ----------------
# Valid one day, for 127.0.0.1 only (the daemon step dials that address). It is
# given to the chart inline (tls.cert, tls.key, tls.ca) through a values file.
mkdir -p "$tmp/tls"
if ! openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$tmp/tls/key.pem" -out "$tmp/tls/cert.pem" >"$tmp/tls/log" 2>&1; then
  cat "$tmp/tls/log" >&2
  echo "FAIL: openssl cannot make the test certificate" >&2
  exit 1
fi
{
  echo "tls:"
  for k in cert:cert.pem key:key.pem ca:cert.pem; do
    echo "  ${k%%:*}: |"
    sed 's/^/    /' "$tmp/tls/${k#*:}"
  done
} >"$tmp/tls-pem.yaml"

lint() { yamllint --strict -f parsable -c "$here/yamllint.yaml" "$@" || fail "yamllint: $*"; }
# A rendering is linted one template at a time: the Grafana dashboard's
# ConfigMap holds a JSON document whose expressions are longer than the line
# limit, so that one file is linted without it (the JSON is checked below).
lint_rendered() { # stream.yaml
  local dir=${1%.yaml}.src f
  mkdir -p "$dir"
  awk -v d="$dir" '/^---$/ { next } /^# Source: /{ n = $3; sub(/.*\//, "", n); f = d "/" n; print "---" >> f } f { print >> f }' "$1"
  for f in "$dir"/*.yaml; do
    if [[ $(basename "$f") == grafana-dashboard.yaml ]]; then
      yamllint --strict -f parsable -d "{extends: $here/yamllint.yaml, rules: {line-length: disable}}" "$f" || fail "yamllint: $f"
    else
      lint "$f"
    fi
  done
}
lint "$chart/Chart.yaml" "$chart/values.yaml" "$here"/values/*.yaml "$here"/bad/*.yaml

# ---- scenarios: NAME NAMESPACE [VALUES FILE...] ------------------------------
scenarios=(
  "default default"
  "hostpath cache $here/values/hostpath.yaml"
  "emptydir data $here/values/emptydir.yaml"
  "seccomp-localhost default $here/values/seccomp-localhost.yaml"
  "secrets-inline analytics $here/values/secrets-inline.yaml"
  "secrets-existing analytics $here/values/secrets-existing.yaml"
  "monitoring monitoring $here/values/monitoring.yaml"
  "sre storage $here/values/sre.yaml"
  "tls secure $here/values/tls.yaml $tmp/tls-pem.yaml"
  "tls-existing cache $here/values/tls-existing.yaml"
  "s3api analytics $here/values/s3api.yaml"
  "compute analytics $here/values/compute.yaml"
)
for s in "${scenarios[@]}"; do
  read -r name ns files <<<"$s"
  out=$tmp/$name
  args=(-chart "$chart" -name ringcache -namespace "$ns" -json "$out.json" -values-json "$out.values.json" -notes "$out.notes")
  for file in ${files:-}; do args+=(-f "$file"); done
  if ! "$tmp/render" "${args[@]}" >"$out.yaml" 2>"$out.err"; then
    fail "[$name] render: $(cat "$out.err")"
    continue
  fi
  lint_rendered "$out.yaml"
  node "$tmp/check.mjs" "$name" "$out.json" "$out.values.json" "$out.notes" "$ns" || fail "[$name] chart checks"
done

# ---- the README documents every value ------------------------------------------
if [[ -f $tmp/default.values.json ]]; then
  node -e '
    const fs = require("fs");
    const v = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
    const readme = fs.readFileSync(process.argv[2], "utf8");
    const leaves = [];
    (function walk(o, p) {
      for (const [k, x] of Object.entries(o)) {
        const q = p ? p + "." + k : k;
        if (x && typeof x === "object" && !Array.isArray(x) && Object.keys(x).length) walk(x, q);
        else leaves.push(q);
      }
    })(v, "");
    const documented = (q) => readme.includes("`" + q + "`") ||
      q.split(".").some((_, i, a) => i > 0 && readme.includes("`" + a.slice(0, i).join(".") + ".*`"));
    const missing = leaves.filter((q) => !documented(q));
    if (missing.length) { console.error("README.md does not describe: " + missing.join(", ")); process.exit(1); }
  ' "$tmp/default.values.json" "$chart/README.md" || fail "helm/ringcache/README.md misses values"
fi

# ---- values the chart must refuse ----------------------------------------------
for f in "$here"/bad/*.yaml; do
  want=$(sed -n 's/^# expect: //p' "$f")
  [[ -n $want ]] || { fail "$f has no '# expect:' line"; continue; }
  if "$tmp/render" -chart "$chart" -f "$f" >/dev/null 2>"$tmp/bad.err"; then
    fail "$(basename "$f") was accepted; expected a refusal naming '$want'"
  elif ! grep -qF -- "$want" "$tmp/bad.err"; then
    fail "$(basename "$f") refused, but the message does not name '$want': $(cat "$tmp/bad.err")"
  fi
done

# ---- the seccomp profile and the image agree with the chart ------------------
node -e '
  const p = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const denied = new Set(p.syscalls.filter(s => s.action !== "SCMP_ACT_ALLOW").flatMap(s => s.names));
  const bad = ["io_uring_setup", "io_uring_enter", "io_uring_register"].filter(n => denied.has(n));
  if (p.defaultAction !== "SCMP_ACT_ALLOW" && p.defaultAction !== "SCMP_ACT_ERRNO") throw new Error("odd defaultAction");
  if (p.defaultAction !== "SCMP_ACT_ALLOW" || bad.length) throw new Error("profile does not allow io_uring: " + bad);
  for (const n of ["ptrace", "bpf", "mount", "unshare", "keyctl", "userfaultfd"])
    if (!denied.has(n)) throw new Error("profile allows " + n);
' "$chart/files/ringcached-io-uring.json" || fail "seccomp profile files/ringcached-io-uring.json"
uid=$(sed -n 's/^runAsUser: //p' "$chart/values.yaml")
grep -qx "USER $uid:$uid" "$src/helm/Dockerfile" || fail "helm/Dockerfile does not run as USER $uid:$uid (values runAsUser)"

# ---- ringcached accepts the rendered config ------------------------------------
# Each rendered ringcached.conf is given to the real daemon; flags override only
# what cannot work here (addresses, ports, the data folder and its size, the
# members). Every Secret volume the container mounts is written out from the
# rendered Secret (its items, base64-decoded) into a local folder, and the
# config's paths under the mount are pointed there: the tenants file, the peer
# token file and the TLS files the daemon reads are the chart's own. It must
# come up (admin /readyz answers, over HTTPS with the test CA when the config
# turns TLS on) and exit 0 on SIGTERM.
daemon=${build:+$build/cached/ringcached}
if [[ -z $daemon || ! -x $daemon ]]; then
  echo "note: ringcached not built (RINGCACHE_BUILD_DIR=$build): the daemon config check is skipped" >&2
elif ! command -v curl >/dev/null; then
  echo "note: curl not found: the daemon config check is skipped" >&2
else
  for name in default emptydir seccomp-localhost secrets-inline sre tls s3api; do
    d=$tmp/daemon-$name
    mkdir -p "$d/data"
    node -e '
      const fs = require("fs");
      const [objsFile, dir] = process.argv.slice(1);
      const objs = JSON.parse(fs.readFileSync(objsFile, "utf8"));
      let conf = objs.find(o => o.kind === "ConfigMap").data["ringcached.conf"];
      const pod = objs.find(o => o.kind === "StatefulSet").spec.template.spec;
      const ctr = pod.containers.find(c => c.name === "ringcached");
      for (const m of ctr.volumeMounts) {
        const v = pod.volumes.find(x => x.name === m.name);
        if (!v || !v.secret) continue;
        const s = objs.find(o => o.kind === "Secret" && o.metadata.name === v.secret.secretName);
        if (!s) throw new Error("Secret " + v.secret.secretName + " is not rendered: this scenario cannot run locally");
        const local = dir + "/mnt/" + m.name;
        fs.mkdirSync(local, { recursive: true });
        for (const it of v.secret.items || Object.keys(s.data).map(k => ({ key: k, path: k }))) {
          if (!(it.key in s.data)) throw new Error("Secret " + s.metadata.name + " has no key " + it.key);
          fs.writeFileSync(local + "/" + it.path, Buffer.from(s.data[it.key], "base64"));
        }
        conf = conf.split(m.mountPath + "/").join(local + "/");
      }
      const left = conf.split("\n").filter(l => /=\s*\/etc\//.test(l));
      if (left.length) throw new Error("the config names files no Secret mount provides: " + left.join("; "));
      fs.writeFileSync(dir + "/ringcached.conf", conf);
    ' "$tmp/$name.json" "$d" 2>"$d/extract.err" || { fail "[$name] cannot run the rendered config locally: $(cat "$d/extract.err")"; continue; }
    # The daemon below listens on loopback (flags override the address), so
    # protected mode is checked here: a node without tenants refuses a pod-IP
    # listen address unless the config asks for anonymous access.
    if grep -q '^listen = 0\.0\.0\.0' "$d/ringcached.conf" && ! grep -q '^tenants = ' "$d/ringcached.conf" \
       && ! grep -qx 'allow-anonymous = true' "$d/ringcached.conf"; then
      fail "[$name] the config listens on 0.0.0.0 without tenants and without allow-anonymous: ringcached would refuse it"
    fi
    # TLS (decided by the values, not the rendered config, so a config that
    # drops TLS fails here): the daemon serves the test certificate, so curl
    # trusts only that.
    curlx=(curl -fsS)
    scheme=http
    if [[ $(node -p 'JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).tls.enabled' "$tmp/$name.values.json") == true ]]; then
      curlx=(curl -fsS --cacert "$tmp/tls/cert.pem")
      scheme=https
    fi
    # the S3 API's port, when the config has one, moves to loopback too
    s3flags=()
    if grep -q '^s3-api-port = ' "$d/ringcached.conf"; then
      s3flags=(--s3-api-listen 127.0.0.1 --s3-api-port 0 --s3-api-port-file "$d/s3api-port")
    fi
    "$daemon" --config "$d/ringcached.conf" --node-id ringcache-0 --data-dir "$d/data" \
      --listen 127.0.0.1 --port 0 --port-file "$d/port" \
      --admin-listen 127.0.0.1 --admin-port 0 --admin-port-file "$d/admin-port" \
      --ssd-capacity 256MiB --ram-capacity 16MiB --members "ringcache-0=127.0.0.1:1" \
      "${s3flags[@]}" >"$d/log" 2>&1 &
    daemon_pid=$!
    for _ in $(seq 100); do
      [[ -s $d/admin-port ]] && break
      kill -0 "$daemon_pid" 2>/dev/null || break
      sleep 0.1
    done
    if [[ ! -s $d/admin-port ]]; then
      wait "$daemon_pid" 2>/dev/null
      fail "[$name] ringcached refused the rendered config: $(tail -5 "$d/log")"
      daemon_pid=
      continue
    fi
    admin=$(cat "$d/admin-port")
    ready=
    for _ in $(seq 100); do
      "${curlx[@]}" "$scheme://127.0.0.1:$admin/readyz" >/dev/null 2>&1 && { ready=1; break; }
      sleep 0.1
    done
    [[ -n $ready ]] || fail "[$name] ringcached on the rendered config never became $scheme-ready: $(tail -5 "$d/log")"
    "${curlx[@]}" "$scheme://127.0.0.1:$admin/config" >"$d/effective" 2>/dev/null || fail "[$name] /config does not answer"
    if [[ $scheme == https ]]; then
      "${curlx[@]}" "https://127.0.0.1:$admin/healthz" >/dev/null 2>&1 || fail "[$name] /healthz does not answer over HTTPS with the test CA"
      curl -fsS -m 2 "http://127.0.0.1:$admin/healthz" >/dev/null 2>&1 && fail "[$name] the admin port still answers plain HTTP with TLS on"
      grep -q 'msg="ringcached ready".* tls=on' "$d/log" || fail "[$name] ringcached does not log tls=on: $(grep -m1 'ringcached ready' "$d/log")"
      openssl s_client -connect "127.0.0.1:$(cat "$d/port")" -CAfile "$tmp/tls/cert.pem" -verify_return_error \
        -verify_ip 127.0.0.1 </dev/null >"$d/s_client" 2>&1 || fail "[$name] the protocol port does not complete a verified TLS handshake: $(tail -3 "$d/s_client")"
    fi
    # The S3 API answers S3's XML: an unsigned request is refused as S3 refuses it
    # (the tenants here give no anonymous access to that bucket).
    if ((${#s3flags[@]})); then
      s3body=$(curl -sS -m 5 "http://127.0.0.1:$(cat "$d/s3api-port" 2>/dev/null)/lake/analytics/x" 2>&1)
      grep -q '<Code>AccessDenied</Code>' <<<"$s3body" || fail "[$name] the S3 API does not answer S3's refusal: $s3body"
    fi
    # The metrics the daemon really exports, for the rule and dashboard check.
    if [[ ! -s $tmp/metrics.txt ]]; then
      "${curlx[@]}" "$scheme://127.0.0.1:$admin/metrics" >"$tmp/metrics.txt" 2>/dev/null || fail "[$name] /metrics does not answer"
    fi
    for k in block-size region-size io drain-timeout fill-deadline threads; do
      want=$(sed -n "s/^$k = //p" "$d/ringcached.conf")
      grep -q "$k" "$d/effective" || fail "[$name] effective config lacks $k (rendered: $want)"
    done
    # the thread count derived from the CPU quantities is the one the daemon runs
    grep -qx "threads = $(sed -n 's/^threads = //p' "$d/ringcached.conf")" "$d/effective" \
      || fail "[$name] the daemon runs $(grep '^threads' "$d/effective"), not the rendered $(grep '^threads' "$d/ringcached.conf")"
    kill -TERM "$daemon_pid"
    wait "$daemon_pid"
    rc=$?
    daemon_pid=
    if [[ $rc -eq 0 ]]; then
      echo "ok [$name] ringcached accepts the rendered config, becomes ready, exits 0 on SIGTERM"
    else
      fail "[$name] ringcached exited $rc on SIGTERM: $(tail -5 "$d/log")"
    fi
  done
fi

# ---- the rules and the dashboard name only metrics the daemon exports ----------
# The list is the live daemon's /metrics above, so a metric the node gains or
# loses is seen here without a hand-kept list.
if [[ -s $tmp/metrics.txt ]]; then
  checked=0
  for s in "${scenarios[@]}"; do
    read -r name _ <<<"$s"
    [[ -f $tmp/$name.json ]] || continue
    grep -q '"kind": "PrometheusRule"\|"grafana_dashboard"' "$tmp/$name.json" || continue
    node "$here/metrics-check.mjs" "$tmp/metrics.txt" "$tmp/$name.json" || fail "[$name] the rules or the dashboard name metrics ringcached does not export"
    checked=$((checked + 1))
  done
  ((checked)) || fail "no scenario renders the PrometheusRule or the dashboard: their metrics were not checked"
else
  echo "note: no /metrics from a live ringcached: the metric names of the rules and the dashboard are not checked" >&2
fi

# ---- the alerts fire when they should (promtool, when installed) ----------------
# promtool (Debian package prometheus) checks the PromQL of the rendered rules
# and of the dashboard's panels and the rules' annotation templates, then runs rules-test.yaml on the monitoring scenario's
# rules: each alert fires for the sick node after its `for`, none for a
# healthy release.
promtool=${RINGCACHE_PROMTOOL:-$(command -v promtool || true)}
if [[ -z $promtool ]]; then
  echo "note: promtool not found (Debian package prometheus): the alert rules' PromQL is not run" >&2
elif [[ -f $tmp/monitoring.json ]]; then
  mkdir -p "$tmp/promtool"
  node -e '
    const fs = require("fs");
    const [objs, dir] = process.argv.slice(1);
    const r = JSON.parse(fs.readFileSync(objs, "utf8")).find((o) => o.kind === "PrometheusRule");
    if (!r) throw new Error("the monitoring scenario renders no PrometheusRule");
    fs.writeFileSync(dir + "/full.yaml", JSON.stringify(r.spec));
    for (const g of r.spec.groups) for (const x of g.rules) delete x.annotations;
    fs.writeFileSync(dir + "/rules.yaml", JSON.stringify(r.spec));
    // the dashboard expressions, Grafana variables filled in, as recording rules: promtool parses them
    const cm = JSON.parse(fs.readFileSync(objs, "utf8")).find((o) => o.kind === "ConfigMap" && o.metadata.labels?.grafana_dashboard);
    if (!cm) throw new Error("the monitoring scenario renders no dashboard ConfigMap");
    const dash = JSON.parse(Object.values(cm.data)[0]);
    const fill = (e) => e.replace(/\$__rate_interval/g, "5m").replace(/\$namespace/g, "monitoring").replace(/\$pod/g, ".*");
    const rules = dash.panels.flatMap((p, i) => p.targets.map((t, j) => ({ record: `dashboard:panel_${i}_${j}`, expr: fill(t.expr) })));
    fs.writeFileSync(dir + "/dashboard.yaml", JSON.stringify({ groups: [{ name: "dashboard", rules }] }));
  ' "$tmp/monitoring.json" "$tmp/promtool" || fail "[monitoring] cannot extract the PrometheusRule and the dashboard"
  cp "$here/rules-test.yaml" "$tmp/promtool/"
  "$promtool" check rules "$tmp/promtool/full.yaml" "$tmp/promtool/dashboard.yaml" >"$tmp/promtool/check.log" 2>&1 \
    || fail "[monitoring] promtool check rules (the alerts, the dashboard's expressions): $(cat "$tmp/promtool/check.log")"
  if (cd "$tmp/promtool" && "$promtool" test rules rules-test.yaml) >"$tmp/promtool/test.log" 2>&1; then
    echo "ok [monitoring] promtool: the rules parse and every alert fires (or not) as rules-test.yaml expects"
  else
    fail "[monitoring] promtool test rules: $(cat "$tmp/promtool/test.log")"
  fi
fi

if ((fails)); then
  echo "test_helm_chart: $fails failure(s)" >&2
  exit 1
fi
echo "test_helm_chart: ok (${#scenarios[@]} scenarios rendered, linted, validated and checked; $(ls "$here"/bad/*.yaml | wc -l) bad values files refused)"
