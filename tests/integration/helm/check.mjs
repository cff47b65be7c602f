// SPDX-License-Identifier: Apache-2.0
//
// check.mjs: checks one rendering of the ringcache chart (the JSON written by
// helm/tools/render). Every object is validated with npm kubernetes-models
// (types and required fields of the Kubernetes API); then the things that
// matter for a ring of cache nodes are checked across objects: the headless
// Service selects the StatefulSet's pods, publishes not-ready addresses and
// lists only the protocol port; the membership source names the headless
// Service's FQDN; probes hit the admin port (HTTPS exactly when TLS is on);
// secrets are neither in the ConfigMap nor written literally into the pod
// spec, and the peer token is a mounted file, not an argument or env var;
// every Secret reference resolves; the files the config names (tenants, peer
// token, TLS certificate, key and CA) are items of read-only Secret mounts;
// the ServiceMonitor scrapes over HTTPS with the TLS Secret's CA when TLS is
// on; the termination grace exceeds the drain deadline (and is the drain +
// 20 s when not given); the container's resources are the values' or the
// preset's, and threads and the RAM tier follow them (quantities parsed here
// independently of the chart); capacities fit the pod's memory and volume;
// the image, pull secrets, common labels and annotations, update strategy,
// PVC retention, extra volumes, mounts, env, sidecars and init containers are
// what the values ask; the NetworkPolicy, evaluated here for probe peers
// (client pods, other pods, peers, monitoring, outside addresses), lets in and
// out exactly what the values say; the PrometheusRule and the Grafana
// dashboard ConfigMap carry the values' names, labels and thresholds.
// Scenario-specific expectations follow.
//
// usage: node check.mjs SCENARIO OBJECTS.json VALUES.json NOTES.txt NAMESPACE
// Exit status 0 when everything holds, 1 with one line per failure.
import { readFileSync } from "node:fs";

const [scenario, objectsFile, valuesFile, notesFile, namespace] = process.argv.slice(2);
if (!namespace) {
  console.error("usage: node check.mjs SCENARIO OBJECTS.json VALUES.json NOTES.txt NAMESPACE");
  process.exit(2);
}
const objects = JSON.parse(readFileSync(objectsFile, "utf8"));
const values = JSON.parse(readFileSync(valuesFile, "utf8"));
const notes = readFileSync(notesFile, "utf8");

const failures = [];
function check(cond, msg) {
  if (!cond) failures.push(msg);
  return !!cond;
}

// ---- 1. kubernetes-models validation -------------------------------------
const notModelled = new Set(["monitoring.coreos.com/v1"]); // CRDs: checked below by hand
for (const o of objects) {
  const where = `${o.kind}/${o.metadata?.name}`;
  if (notModelled.has(o.apiVersion)) continue;
  let models;
  try {
    models = await import(`kubernetes-models/${o.apiVersion}`); // "v1" is the core group
  } catch (e) {
    failures.push(`${where}: kubernetes-models has no API ${o.apiVersion} (${e.message})`);
    continue;
  }
  const Model = models[o.kind];
  if (!check(Model, `${where}: kubernetes-models has no kind ${o.kind} in ${o.apiVersion}`)) continue;
  try {
    new Model(o).validate();
  } catch (e) {
    failures.push(`${where}: invalid: ${e.message}`);
  }
}

// ---- helpers ---------------------------------------------------------------
// the compute servers' objects (compute.enabled) are checked apart, in 11.
const isCompute = (o) => o.metadata?.labels?.["app.kubernetes.io/component"] === "compute";
const computeObjects = objects.filter(isCompute);
const byKind = (k) => objects.filter((o) => o.kind === k && !isCompute(o));
const one = (k) => {
  const l = byKind(k);
  check(l.length === 1, `expected exactly one ${k}, found ${l.length}`);
  return l[0];
};
const sortKeys = (o) => (o && typeof o === "object" && !Array.isArray(o)
  ? Object.fromEntries(Object.keys(o).sort().map((k) => [k, sortKeys(o[k])])) : o);
const same = (a, b) => JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));
const matches = (selector, labels) =>
  !!selector && Object.keys(selector).length > 0 &&
  Object.entries(selector).every(([k, v]) => labels?.[k] === v);
const parseConf = (text) => {
  const m = new Map();
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const eq = line.indexOf("=");
    if (!check(eq > 0, `config line ${i + 1} is not key = value: ${raw}`)) continue;
    const k = line.slice(0, eq).trim();
    check(!m.has(k), `config key ${k} appears twice`);
    m.set(k, line.slice(eq + 1).trim());
  }
  return m;
};
const seconds = (d) => {
  const r = /^(\d+)(ms|s|m|h)$/.exec(d ?? "");
  if (!r) return NaN;
  return Number(r[1]) * { ms: 0.001, s: 1, m: 60, h: 3600 }[r[2]];
};
const mib = (s) => {
  const r = /^(\d+)(MiB|GiB)$/.exec(s ?? "");
  if (!r) return NaN;
  return Number(r[1]) * (r[2] === "GiB" ? 1024 : 1);
};
// A Kubernetes quantity in its base unit (bytes, cores): 500m, 2, 1.5Gi, 4G.
const quantity = (q) => {
  if (typeof q === "number") return q;
  const r = /^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/.exec(q ?? "");
  if (!r) return NaN;
  const unit = { "": 1, m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
    Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 }[r[2] ?? ""];
  return Number(r[1]) * unit;
};
const quantityMiB = (q) => quantity(q) / 2 ** 20;

const sts = one("StatefulSet");
const configMaps = byKind("ConfigMap").filter((c) => "ringcached.conf" in (c.data ?? {}));
check(configMaps.length === 1, `expected one ConfigMap with ringcached.conf, found ${configMaps.length}`);
const cm = configMaps[0];
const services = byKind("Service");
const secrets = byKind("Secret");
if (!sts || !cm) {
  for (const f of failures) console.error(`FAIL [${scenario}] ${f}`);
  process.exit(1);
}
const pod = sts.spec.template;
const podLabels = pod.metadata.labels;
const ctr = pod.spec.containers.find((c) => c.name === "ringcached");
check(ctr, "no ringcached container");
const containerPort = (ref) =>
  typeof ref === "number"
    ? ctr.ports.find((p) => p.containerPort === ref)
    : ctr.ports.find((p) => p.name === ref);

// ---- 2. config file --------------------------------------------------------
const confText = cm.data?.["ringcached.conf"];
check(typeof confText === "string", "ConfigMap has no ringcached.conf");
const conf = parseConf(confText ?? "");
const protoPort = Number(conf.get("port"));
const adminPort = Number(conf.get("admin-port"));
check(containerPort("protocol")?.containerPort === protoPort, "container port 'protocol' differs from the config's port");
check(containerPort("admin")?.containerPort === adminPort, "container port 'admin' differs from the config's admin-port");
if (values.ports.s3api) {
  check(Number(conf.get("s3-api-port")) === values.ports.s3api, "ports.s3api is set but the config has no s3-api-port line for it");
  check(containerPort("s3api")?.containerPort === values.ports.s3api, "container port 's3api' differs from ports.s3api");
} else {
  check(!conf.has("s3-api-port") && !containerPort("s3api"), "the S3 API is configured though ports.s3api is off");
}
check(ctr.args.includes("--config"), "ringcached is not given --config");
const confPath = ctr.args[ctr.args.indexOf("--config") + 1];
const mountFor = (path) =>
  ctr.volumeMounts.find((m) => path === m.mountPath || path.startsWith(m.mountPath + "/"));
const confMount = mountFor(confPath ?? "");
check(confMount, `config path ${confPath} is not under a volume mount`);
const confVol = pod.spec.volumes.find((v) => v.name === confMount?.name);
check(confVol?.configMap?.name === cm.metadata.name, "the config mount is not the chart's ConfigMap");

// ---- 3. headless Service and membership ----------------------------------
const headless = services.find((s) => s.metadata.name === sts.spec.serviceName);
if (check(headless, `StatefulSet serviceName ${sts.spec.serviceName} names no rendered Service`)) {
  check(headless.spec.clusterIP === "None", "the StatefulSet's Service is not headless (clusterIP None)");
  check(headless.spec.publishNotReadyAddresses === true, "the headless Service does not publish not-ready addresses");
  check(matches(headless.spec.selector, podLabels), "the headless Service does not select the StatefulSet's pods");
  check(headless.spec.ports.length === 1, "the headless Service lists more than the protocol port (SRV answers would carry every port)");
  const hp = headless.spec.ports[0];
  check(hp.port === protoPort && containerPort(hp.targetPort)?.containerPort === protoPort,
    "the headless Service's port does not reach the protocol port");
  const domain = values.clusterDomain;
  const fqdn = `${headless.metadata.name}.${namespace}.svc.${domain}`;
  check(conf.get("members") === `dns:${fqdn}:${protoPort}`,
    `members is ${conf.get("members")}, expected dns:${fqdn}:${protoPort}`);
  check(notes.includes(`--cache dns:${fqdn}:${protoPort}`), "NOTES.txt does not give --cache dns:<headless fqdn>");
  check(notes.includes(`RINGCACHE_CACHE=dns:${fqdn}:${protoPort}`), "NOTES.txt does not give RINGCACHE_CACHE");
  const n = sts.spec.replicas;
  const last = `${sts.metadata.name}-${n - 1}=${sts.metadata.name}-${n - 1}.${fqdn}:${protoPort}`;
  check(notes.includes(last), `NOTES.txt's static list lacks ${last}`);
}
check(matches(sts.spec.selector.matchLabels, podLabels), "the StatefulSet's selector does not match its pod template");
const ni = ctr.args.indexOf("--node-id");
check(ni >= 0 && ctr.args[ni + 1] === "$(POD_NAME)", "--node-id is not $(POD_NAME)");
const podName = ctr.env.find((e) => e.name === "POD_NAME");
check(podName?.valueFrom?.fieldRef?.fieldPath === "metadata.name", "POD_NAME is not the pod's metadata.name");
check(!conf.has("node-id"), "node-id is in the ConfigMap (every pod would share it)");

// ---- 4. regular Service ----------------------------------------------------
const regular = services.filter((s) => s !== headless);
check(regular.length === 1, `expected one regular Service, found ${regular.length}`);
for (const s of regular) {
  check(s.spec.clusterIP !== "None", "the regular Service is headless");
  check(matches(s.spec.selector, podLabels), "the regular Service does not select the pods");
  for (const p of s.spec.ports) check(containerPort(p.targetPort), `Service port ${p.name} targets no container port`);
  check(s.spec.ports.some((p) => containerPort(p.targetPort)?.containerPort === adminPort), "the regular Service has no admin port");
  // the S3 API: in the Service exactly when ports.s3api is set, on the container's port
  const s3p = s.spec.ports.find((p) => p.name === "s3api");
  if (values.ports.s3api) {
    check(s3p && s3p.port === values.ports.s3api && containerPort(s3p.targetPort)?.containerPort === values.ports.s3api,
      "ports.s3api is set but the regular Service has no s3api port reaching the container's");
  } else {
    check(!s3p, "the regular Service has an s3api port though ports.s3api is off");
  }
}

// ---- 5. probes ---------------------------------------------------------------
// With tls-cert in the config the admin port serves HTTPS only: an HTTP probe
// would fail and the kubelet would restart every pod forever.
const tlsOn = conf.has("tls-cert");
check(tlsOn === (values.tls?.enabled === true), `tls.enabled is ${values.tls?.enabled} but the config ${tlsOn ? "has" : "lacks"} tls-cert`);
for (const [probe, path] of [["livenessProbe", "/healthz"], ["readinessProbe", "/readyz"], ["startupProbe", "/healthz"]]) {
  const p = ctr[probe];
  if (!check(p?.httpGet, `${probe} is not an HTTP GET`)) continue;
  check(p.httpGet.path === path, `${probe} asks ${p.httpGet.path}, expected ${path}`);
  check(containerPort(p.httpGet.port)?.containerPort === adminPort, `${probe} does not hit the admin port`);
  const scheme = p.httpGet.scheme ?? "HTTP";
  check(scheme === (tlsOn ? "HTTPS" : "HTTP"), `${probe} uses scheme ${scheme}, but TLS is ${tlsOn ? "on" : "off"} on the admin port`);
}

// ---- 6. secrets: not in the ConfigMap, not literal in the pod ------------------
const secretOptions = ["s3-access-key", "s3-secret-key", "peer-token"];
for (const k of secretOptions) check(!conf.has(k), `secret option ${k} is in the ConfigMap`);
check(!/-----BEGIN/.test(confText ?? ""), "the ConfigMap holds PEM data (certificates and keys belong in a Secret)");
const pemBody = (pem) => (pem ?? "").split("\n").filter((l) => l && !l.startsWith("-----")).join("");
const secretValues = [
  values.s3?.credentials?.accessKeyId, values.s3?.credentials?.secretAccessKey,
  values.s3?.credentials?.sessionToken, values.peerToken?.value,
  ...(values.tls?.key ?? "").split("\n").filter((l) => l.length >= 32 && !l.startsWith("-----")),
  ...[...(values.tenants?.file ?? "").matchAll(/^\s*(?:token|aws_secret_access_key|aws_access_key_id)\s*=\s*(\S+)/gm)].map((m) => m[1]),
].filter((v) => typeof v === "string" && v.length >= 8);
for (const o of objects) {
  if (o.kind === "Secret") continue;
  const text = JSON.stringify(o);
  for (const v of secretValues) check(!text.includes(v), `${o.kind}/${o.metadata.name} contains a secret value in plain text`);
}
for (const e of ctr.env) check(!("value" in e) || !/^AWS_(SECRET|ACCESS|SESSION)/.test(e.name), `env ${e.name} carries a literal value`);
for (const a of ctr.args) check(!secretValues.includes(a), "a secret is written literally into the container's args");
// The peer token must not be on the command line (ps shows it) nor in the
// environment (/proc/PID/environ, `kubectl describe`, crash dumps): only a file.
check(!ctr.args.some((a) => /^--peer-token(=|$)/.test(a)), "--peer-token is on ringcached's command line (visible in the process list)");
check(!ctr.args.some((a) => /\$\(/.test(a) && a !== "$(POD_NAME)"), "an argument expands an env var other than POD_NAME");
const peerSecretName = values.peerToken?.existingSecret || (values.peerToken?.value ? secrets.find((s) => s.type !== "kubernetes.io/tls")?.metadata.name : "");
for (const e of ctr.env) {
  const r = e.valueFrom?.secretKeyRef;
  check(!/PEER/i.test(e.name), `env ${e.name} looks like the peer token`);
  check(!(r && r.name === peerSecretName && r.key === values.peerToken?.key), `env ${e.name} carries the peer token from Secret ${r?.name}`);
}
for (const e of ctr.envFrom ?? []) check(!e.secretRef, `envFrom pulls a whole Secret (${e.secretRef?.name}) into the environment`);
// every secretKeyRef / secret volume resolves: to a rendered Secret that has the key, or to a named existing Secret
const existing = new Set([values.s3?.credentials?.existingSecret, values.tenants?.existingSecret,
  values.peerToken?.existingSecret, values.tls?.existingSecret].filter(Boolean));
function resolves(name, key, optional) {
  const s = secrets.find((x) => x.metadata.name === name);
  if (s) return check(optional || key in (s.data ?? {}) || key in (s.stringData ?? {}), `Secret ${name} has no key ${key}`);
  return check(existing.has(name), `Secret ${name} is neither rendered nor an existingSecret value`);
}
for (const e of ctr.env) {
  const r = e.valueFrom?.secretKeyRef;
  if (r) resolves(r.name, r.key, r.optional);
}
for (const v of pod.spec.volumes) {
  if (v.secret) for (const it of v.secret.items ?? []) resolves(v.secret.secretName, it.key, false);
}
for (const s of secrets) for (const [k, v] of Object.entries(s.data ?? {})) {
  check(/^[A-Za-z0-9+/]*={0,2}$/.test(v), `Secret ${s.metadata.name} key ${k} is not base64`);
}
// A file the config names must be an item of a read-only Secret mount, the
// item's key must be the one expected, and its mode must keep others out.
function secretFile(option, wantKey) {
  const path = conf.get(option);
  if (!check(path, `the config has no ${option}`)) return undefined;
  const m = mountFor(path);
  const vol = pod.spec.volumes.find((v) => v.name === m?.name);
  if (!check(vol?.secret, `${option} ${path} is not under a Secret volume mount`)) return undefined;
  check(m.readOnly === true, `the mount of ${option} (${m.mountPath}) is not read-only`);
  const rel = path.slice(m.mountPath.length + 1);
  const item = (vol.secret.items ?? []).find((it) => it.path === rel);
  if (!check(item, `${option} ${path}: the Secret volume ${vol.name} has no item at ${rel}`)) return undefined;
  check(item.key === wantKey, `${option} is the Secret's key ${item.key}, expected ${wantKey}`);
  const mode = item.mode ?? vol.secret.defaultMode ?? 0o644;
  check(mode === 0o400 || mode === 0o440, `${option} is mounted with mode 0${mode.toString(8)}, expected 0400 or 0440`);
  return { path, mount: m, vol, item, secret: secrets.find((s) => s.metadata.name === vol.secret.secretName) };
}
if (conf.has("tenants")) {
  secretFile("tenants", values.tenants.key);
  check(conf.has("peer-token-file"), "tenants are on but no peer-token-file: nodes could not PUT blocks to each other");
}
const wantsPeer = !!(values.peerToken?.existingSecret || values.peerToken?.value);
check(conf.has("peer-token-file") === wantsPeer, `a peer token is ${wantsPeer ? "" : "not "}given but the config ${conf.has("peer-token-file") ? "has" : "lacks"} peer-token-file`);
if (wantsPeer) {
  const f = secretFile("peer-token-file", values.peerToken.key);
  if (f) check(f.vol.secret.secretName === (values.peerToken.existingSecret || peerSecretName), `the peer token is mounted from Secret ${f.vol.secret.secretName}`);
  if (f?.secret && values.peerToken.value)
    check(Buffer.from(f.secret.data?.[values.peerToken.key] ?? "", "base64").toString() === values.peerToken.value, "the mounted peer token is not peerToken.value");
}

// ---- 6b. TLS: a kubernetes.io/tls Secret mounted read-only, named by the config
const tlsSecretName = values.tls?.existingSecret || `${sts.metadata.name}-tls`;
const wantCA = !!(values.tls?.existingSecret ? values.tls?.existingSecretHasCA : values.tls?.ca);
if (tlsOn) {
  const cert = secretFile("tls-cert", "tls.crt");
  const key = secretFile("tls-key", "tls.key");
  check(conf.has("tls-ca") === wantCA, `the config ${conf.has("tls-ca") ? "has" : "lacks"} tls-ca, but the TLS Secret ${wantCA ? "has" : "has no"} ca.crt`);
  const ca = wantCA ? secretFile("tls-ca", "ca.crt") : undefined;
  for (const f of [cert, key, ca]) if (f) check(f.vol.secret.secretName === tlsSecretName, `${f.path} comes from Secret ${f.vol.secret.secretName}, not ${tlsSecretName}`);
  const own = secrets.find((s) => s.metadata.name === tlsSecretName);
  if (values.tls.existingSecret) {
    check(!own, "tls.existingSecret is given, but the chart still renders a TLS Secret");
  } else if (check(own, `the chart renders no TLS Secret ${tlsSecretName}`)) {
    check(own.type === "kubernetes.io/tls", `Secret ${tlsSecretName} is of type ${own.type}, not kubernetes.io/tls`);
    const dec = (k) => Buffer.from(own.data?.[k] ?? "", "base64").toString();
    check(dec("tls.crt") === values.tls.cert, "tls.crt in the TLS Secret is not tls.cert");
    check(dec("tls.key") === values.tls.key, "tls.key in the TLS Secret is not tls.key");
    check(wantCA ? dec("ca.crt") === values.tls.ca : !("ca.crt" in (own.data ?? {})), "ca.crt in the TLS Secret is not tls.ca");
    check(pod.metadata.annotations?.["checksum/tls"], "no checksum/tls annotation (pods would not roll on a new certificate)");
  }
  check(notes.includes("TLS is on") && notes.includes("tls = true"), "NOTES.txt does not tell clients to connect with TLS");
  if (wantCA) check(notes.includes(tlsSecretName) && notes.includes("ca\\.crt") && notes.includes("--cacert"), "NOTES.txt does not say where the CA is");
} else {
  for (const k of ["tls-cert", "tls-key", "tls-ca"]) check(!conf.has(k), `TLS is off but the config has ${k}`);
  check(!secrets.some((s) => s.type === "kubernetes.io/tls"), "TLS is off but a TLS Secret is rendered");
  check(notes.includes("TLS is off"), "NOTES.txt does not warn that the ports are plain TCP");
}

// ---- 7. termination, capacities, storage, security -----------------------------
const drain = seconds(conf.get("drain-timeout"));
check(Number.isFinite(drain), `drain-timeout ${conf.get("drain-timeout")} is not a duration`);
check(pod.spec.terminationGracePeriodSeconds > drain,
  `terminationGracePeriodSeconds ${pod.spec.terminationGracePeriodSeconds} does not exceed drain-timeout ${drain}s`);
// resources: the values' when given, else the preset's; threads and the RAM
// tier derive from them.
const presets = {
  none: undefined,
  small: { requests: { cpu: "1", memory: "2Gi" }, limits: { memory: "2Gi" } },
  medium: { requests: { cpu: "2", memory: "4Gi" }, limits: { memory: "4Gi" } },
  large: { requests: { cpu: "4", memory: "16Gi" }, limits: { memory: "16Gi" } },
};
const wantRes = Object.keys(values.resources ?? {}).length ? values.resources : presets[values.resourcesPreset];
check(JSON.stringify(ctr.resources ?? {}) === JSON.stringify(wantRes ?? {}) ||
  JSON.stringify(sortKeys(ctr.resources ?? {})) === JSON.stringify(sortKeys(wantRes ?? {})),
  `container resources ${JSON.stringify(ctr.resources)} are not ${values.resourcesPreset ? "the preset's or the values'" : "the values'"}: ${JSON.stringify(wantRes)}`);
const memQ = ctr.resources?.limits?.memory ?? ctr.resources?.requests?.memory;
const memMiB = memQ === undefined ? 0 : quantityMiB(memQ);
const wantRam = Math.floor(Math.floor(memMiB) * values.config.ramTierPercent / 100);
check(mib(conf.get("ram-capacity")) === wantRam,
  `ram-capacity ${conf.get("ram-capacity")} is not ${values.config.ramTierPercent}% of the memory ${memQ} (${wantRam}MiB)`);
if (memQ !== undefined) check(mib(conf.get("ram-capacity")) < memMiB, "ram-capacity is not below the container's memory");
const cpuQ = ctr.resources?.requests?.cpu ?? ctr.resources?.limits?.cpu;
const wantThreads = values.config.threads > 0 ? values.config.threads : Math.ceil(quantity(cpuQ) - 1e-9);
check(Number(conf.get("threads")) === wantThreads && wantThreads >= 1,
  `threads ${conf.get("threads")} is not config.threads or the CPU request ${cpuQ} rounded up (${wantThreads})`);
for (const k of ["cpu", "memory"]) {
  const rq = ctr.resources?.requests?.[k], lm = ctr.resources?.limits?.[k];
  if (rq !== undefined && lm !== undefined) check(quantity(rq) <= quantity(lm), `${k} request ${rq} exceeds its limit ${lm}`);
}
const grace = pod.spec.terminationGracePeriodSeconds;
check(grace === (values.terminationGracePeriodSeconds === "" ? drain + 20 : values.terminationGracePeriodSeconds),
  `terminationGracePeriodSeconds ${grace}: expected ${values.terminationGracePeriodSeconds === "" ? "the drain + 20" : values.terminationGracePeriodSeconds}`);
const dataDir = conf.get("data-dir");
const dataMount = ctr.volumeMounts.find((m) => m.mountPath === dataDir);
check(dataMount && !dataMount.readOnly, `data-dir ${dataDir} is not a writable volume mount`);
const claim = (sts.spec.volumeClaimTemplates ?? []).find((c) => c.metadata.name === dataMount?.name);
const podVol = pod.spec.volumes.find((v) => v.name === dataMount?.name);
check(!!claim !== !!podVol, "the data volume must be exactly one of a claim template or a pod volume");
const volMiB = claim ? quantityMiB(claim.spec.resources.requests.storage)
  : podVol?.emptyDir ? quantityMiB(podVol.emptyDir.sizeLimit) : values.storage.sizeGiB * 1024;
check(mib(conf.get("ssd-capacity")) < volMiB, `ssd-capacity ${conf.get("ssd-capacity")} does not fit the ${volMiB} MiB volume`);
const psc = pod.spec.securityContext ?? {};
const csc = ctr.securityContext ?? {};
check(psc.runAsNonRoot === true && psc.runAsUser > 0, "the pod does not run as non-root");
check(csc.readOnlyRootFilesystem === true, "the root filesystem is writable");
check(csc.allowPrivilegeEscalation === false, "privilege escalation is allowed");
check(csc.capabilities?.drop?.includes("ALL"), "capabilities are not all dropped");
check(pod.spec.automountServiceAccountToken === false, "a service account token is mounted");
const sc = psc.seccompProfile?.type;
if (conf.get("io") === "io_uring") check(sc !== "RuntimeDefault", "io = io_uring under RuntimeDefault seccomp (io_uring is blocked there)");
if (sc === "Localhost") check(psc.seccompProfile.localhostProfile, "Localhost seccomp without a localhostProfile");
check(notes.includes(`seccomp profile ${sc}`), "NOTES.txt does not say which seccomp profile runs");
check(notes.includes(conf.get("io") === "threads" ? "thread pool" : sc === "RuntimeDefault" ? "falls back" : "ringcached uses"),
  "NOTES.txt does not say which disk I/O path the release runs with");

// ---- 8. PDB, ServiceMonitor, labels ---------------------------------------------
for (const pdb of byKind("PodDisruptionBudget")) {
  check(matches(pdb.spec.selector.matchLabels, podLabels), "the PDB does not select the pods");
}
for (const sm of byKind("ServiceMonitor")) {
  const sel = services.filter((s) => matches(sm.spec.selector.matchLabels, s.metadata.labels));
  check(sel.length === 1 && sel[0] !== headless, "the ServiceMonitor must select exactly the regular Service");
  for (const ep of sm.spec.endpoints) {
    check(sel[0]?.spec.ports.some((p) => p.name === ep.port && containerPort(p.targetPort)?.containerPort === adminPort),
      `ServiceMonitor endpoint port ${ep.port} is not the admin port`);
    check(ep.path === "/metrics", "ServiceMonitor does not scrape /metrics");
    check(ep.scheme === (tlsOn ? "https" : "http"), `ServiceMonitor scrapes with scheme ${ep.scheme}, but the admin port serves ${tlsOn ? "HTTPS" : "HTTP"}`);
    if (tlsOn) {
      const tc = ep.tlsConfig ?? {};
      check(tc.serverName === (values.metrics.serviceMonitor.serverName || `${sel[0]?.metadata.name}.${namespace}.svc.${values.clusterDomain}`),
        `ServiceMonitor tlsConfig.serverName is ${tc.serverName}`);
      check(tc.insecureSkipVerify === values.metrics.serviceMonitor.insecureSkipVerify, "ServiceMonitor insecureSkipVerify differs from the value");
      if (wantCA) {
        check(tc.ca?.secret?.name === tlsSecretName && tc.ca?.secret?.key === "ca.crt", `ServiceMonitor does not verify with ca.crt of Secret ${tlsSecretName}`);
        if (tc.ca?.secret) resolves(tc.ca.secret.name, tc.ca.secret.key, false);
      } else {
        check(!tc.ca, "ServiceMonitor names a CA the TLS Secret does not have");
      }
    } else {
      check(!ep.tlsConfig, "ServiceMonitor has a tlsConfig while TLS is off");
    }
  }
  check(sm.spec.namespaceSelector?.matchNames?.includes(namespace), "ServiceMonitor does not look in the release namespace");
}
for (const o of objects) {
  for (const l of ["app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version", "app.kubernetes.io/managed-by"]) {
    check(o.metadata.labels?.[l], `${o.kind}/${o.metadata.name} lacks label ${l}`);
  }
  for (const [k, v] of Object.entries(values.commonLabels ?? {}))
    check(o.metadata.labels?.[k] === v, `${o.kind}/${o.metadata.name} lacks commonLabels ${k}=${v}`);
  for (const [k, v] of Object.entries(values.commonAnnotations ?? {}))
    check(o.metadata.annotations?.[k] === v, `${o.kind}/${o.metadata.name} lacks commonAnnotations ${k}=${v}`);
}
for (const [k, v] of Object.entries({ ...values.commonLabels, ...values.podLabels }))
  check(podLabels[k] === v, `the pods lack label ${k}=${v} (commonLabels / podLabels)`);
for (const [k, v] of Object.entries(values.podAnnotations ?? {}))
  check(pod.metadata.annotations?.[k] === v, `the pods lack podAnnotations ${k}=${v}`);
// The claim template is immutable in a StatefulSet: common labels there would
// make the next helm upgrade fail when they change.
for (const c of sts.spec.volumeClaimTemplates ?? [])
  for (const k of Object.keys(values.commonLabels ?? {})) check(!(k in (c.metadata.labels ?? {})), `the claim template carries commonLabels ${k}`);

// ---- 9. image, pull secrets, rollout, extras ------------------------------------
{
  const registry = values.global?.imageRegistry || values.image.registry;
  const name = (registry ? registry.replace(/\/$/, "") + "/" : "") + values.image.repository;
  const want = values.image.digest ? `${name}@${values.image.digest}` : `${name}:${values.image.tag || "0.1.0"}`;
  check(ctr.image === want, `image is ${ctr.image}, expected ${want}`);
  const secretNames = [...new Set([...(values.global?.imagePullSecrets ?? []), ...(values.imagePullSecrets ?? [])]
    .map((x) => (typeof x === "string" ? x : x.name)))];
  check(same((pod.spec.imagePullSecrets ?? []).map((x) => x.name), secretNames),
    `imagePullSecrets are ${JSON.stringify(pod.spec.imagePullSecrets)}, expected ${secretNames}`);
}
check(same(sts.spec.updateStrategy, values.updateStrategy), `updateStrategy is ${JSON.stringify(sts.spec.updateStrategy)}`);
const retention = values.persistentVolumeClaimRetentionPolicy;
check(retention.enabled
  ? same(sts.spec.persistentVolumeClaimRetentionPolicy, { whenScaled: retention.whenScaled, whenDeleted: retention.whenDeleted })
  : !sts.spec.persistentVolumeClaimRetentionPolicy, "persistentVolumeClaimRetentionPolicy does not follow the values");
check((pod.spec.priorityClassName ?? "") === values.priorityClassName, "priorityClassName not rendered");
for (const v of values.extraVolumes ?? []) check(pod.spec.volumes.some((x) => same(x, v)), `extra volume ${v.name} missing`);
for (const m of values.extraVolumeMounts ?? []) check(ctr.volumeMounts.some((x) => same(x, m)), `extra volume mount ${m.name} missing`);
for (const e of values.extraEnvVars ?? []) check(ctr.env.some((x) => same(x, e)), `extra env ${e.name} missing`);
check(same(pod.spec.containers.slice(1), values.sidecars ?? []) && pod.spec.containers[0] === ctr, "the sidecars are not the containers after ringcached");
check(same(pod.spec.initContainers ?? [], values.initContainers ?? []), "initContainers not rendered");
// every mount of every container names a volume of the pod or a claim template
const volNames = new Set([...pod.spec.volumes.map((v) => v.name), ...(sts.spec.volumeClaimTemplates ?? []).map((c) => c.metadata.name)]);
for (const c of [...pod.spec.containers, ...(pod.spec.initContainers ?? [])])
  for (const m of c.volumeMounts ?? []) check(volNames.has(m.name), `container ${c.name} mounts ${m.name}, which is no volume of the pod`);
check(volNames.size === pod.spec.volumes.length + (sts.spec.volumeClaimTemplates ?? []).length, "two volumes share a name");

// ---- 10. NetworkPolicy: evaluated for probe peers --------------------------------
// A peer is {ns, labels} (a pod) or {ip}. A rule admits a peer on a port when
// its ports list the port (or is empty) and one of its from/to entries selects
// the peer; no rule, no traffic (the policy selects the pods for both ways).
const nsLabels = (ns) => ({ "kubernetes.io/metadata.name": ns });
const ipIn = (ip, cidr) => {
  if (!/^[0-9.]+\/[0-9]+$/.test(cidr) || !/^[0-9.]+$/.test(ip)) return cidr === "::/0" ? ip.includes(":") : false;
  const [base, bits] = cidr.split("/");
  const n = (a) => a.split(".").reduce((x, o) => x * 256 + Number(o), 0);
  const size = 2 ** (32 - Number(bits));
  return Math.floor(n(ip) / size) === Math.floor(n(base) / size);
};
const selects = (sel, labels) => !!sel && !sel.matchExpressions && Object.entries(sel.matchLabels ?? {}).every(([k, v]) => labels?.[k] === v);
function peerMatches(entry, peer, policyNs) {
  if (entry.ipBlock) return !!peer.ip && ipIn(peer.ip, entry.ipBlock.cidr) && !(entry.ipBlock.except ?? []).some((c) => ipIn(peer.ip, c));
  if (peer.ip) return false;
  if (entry.namespaceSelector && !selects(entry.namespaceSelector, nsLabels(peer.ns))) return false;
  if (!entry.namespaceSelector && peer.ns !== policyNs) return false;
  return entry.podSelector ? selects(entry.podSelector, peer.labels) : true;
}
function admits(policy, way, peer, port, proto = "TCP") {
  const rules = policy.spec[way] ?? [];
  return rules.some((r) => {
    const ports = r.ports ?? [];
    if (ports.length && !ports.some((p) => p.port === port && (p.protocol ?? "TCP") === proto)) return false;
    const peers = r[way === "ingress" ? "from" : "to"] ?? [];
    return !peers.length || peers.some((e) => peerMatches(e, peer, policy.metadata.namespace ?? namespace));
  });
}
const policies = byKind("NetworkPolicy");
const npv = values.networkPolicy;
check(policies.length === (npv.enabled ? 1 : 0), `networkPolicy.enabled is ${npv.enabled} but ${policies.length} NetworkPolicies are rendered`);
if (npv.enabled && policies.length === 1) {
  const np = policies[0];
  check(selects(np.spec.podSelector, podLabels), "the NetworkPolicy does not select the cache pods");
  check(same(np.spec.policyTypes, ["Ingress", "Egress"]), "the NetworkPolicy does not govern both ingress and egress");
  // the data ports: every port of the container but the admin port
  const dataPorts = ctr.ports.map((p) => p.containerPort).filter((p) => p !== adminPort);
  check(dataPorts.includes(protoPort), "the protocol port is not a data port");
  if (values.ports.s3api) check(dataPorts.includes(values.ports.s3api), "the S3 API port is not a data port");
  const self = { ns: namespace, labels: podLabels };
  const clientLabels = npv.clients.podLabels ?? {};
  const hasClientLabels = Object.keys(clientLabels).length > 0;
  const probes = [
    // [what, peer, may reach data ports, may reach admin]
    ["a cache pod of the release", self, true, false],
    ["an unlabelled pod of the release namespace", { ns: namespace, labels: { app: "other" } }, false, false],
    ["an unlabelled pod of another namespace", { ns: "elsewhere", labels: { app: "other" } }, false, false],
    ["an outside address", { ip: "203.0.113.7" }, false, false],
  ];
  if (hasClientLabels) {
    probes.push(["a client pod of the release namespace", { ns: namespace, labels: { ...clientLabels, app: "spark" } }, true, false]);
    probes.push(["a client pod of another namespace", { ns: "elsewhere", labels: { ...clientLabels } }, npv.clients.podLabelsInAllNamespaces, false]);
    // every label is needed, not one of them
    for (const k of Object.keys(clientLabels)) {
      const partial = { ...clientLabels };
      delete partial[k];
      probes.push([`a pod lacking the client label ${k}`, { ns: namespace, labels: partial }, false, false]);
    }
  }
  for (const ns of npv.clients.namespaces ?? []) probes.push([`a pod of client namespace ${ns}`, { ns, labels: {} }, true, false]);
  const adminLabels = npv.admin.podLabels ?? {};
  for (const ns of npv.admin.namespaces ?? []) {
    probes.push([`a monitoring pod of ${ns}`, { ns, labels: { ...adminLabels } }, false, true]);
    if (Object.keys(adminLabels).length) probes.push([`an unlabelled pod of ${ns}`, { ns, labels: {} }, false, false]);
  }
  const extraIn = npv.extraIngress ?? [];
  const monitoring = (peer) => !peer.ip && (npv.admin.namespaces ?? []).includes(peer.ns) &&
    Object.entries(adminLabels).every(([k, v]) => peer.labels?.[k] === v);
  for (const [what, peer, wantData, admin] of probes) {
    const wantAdmin = admin || monitoring(peer);
    for (const p of dataPorts) {
      const got = admits(np, "ingress", peer, p);
      const viaExtra = admits({ metadata: np.metadata, spec: { ingress: extraIn } }, "ingress", peer, p);
      check(got === (wantData || viaExtra), `${what} ${got ? "reaches" : "cannot reach"} data port ${p}`);
    }
    check(admits(np, "ingress", peer, adminPort) === wantAdmin, `${what} ${wantAdmin ? "cannot reach" : "reaches"} the admin port`);
  }
  // egress from a cache pod
  const s3Ports = npv.s3.ports?.length ? npv.s3.ports
    : [values.s3.endpoint ? Number(new URL(values.s3.endpoint).port || (values.s3.endpoint.startsWith("https:") ? 443 : 80)) : 443];
  const kubeDns = { ns: "kube-system", labels: { "k8s-app": "kube-dns" } };
  check(admits(np, "egress", kubeDns, 53, "UDP") && admits(np, "egress", kubeDns, 53, "TCP"), "the cache pods cannot reach DNS (53/UDP, 53/TCP)");
  check(admits(np, "egress", { ip: "169.254.20.10" }, 53, "UDP"), "the cache pods cannot reach a node-local DNS cache");
  check(admits(np, "egress", self, protoPort), "a cache pod cannot reach its peers' protocol port");
  check(!admits(np, "egress", { ns: "elsewhere", labels: podLabels }, protoPort), "the cache pods reach a look-alike pod in another namespace");
  const s3ip = "52.95.150.10";
  for (const p of s3Ports) check(admits(np, "egress", { ip: s3ip }, p), `the cache pods cannot reach S3 at ${s3ip}:${p}`);
  for (const p of [22, 6443, 7070 === protoPort ? 7071 : 7070])
    if (!s3Ports.includes(p)) check(!admits(np, "egress", { ip: s3ip }, p), `the cache pods may connect to ${s3ip}:${p}, not an S3 port`);
  check(!admits(np, "egress", { ns: "elsewhere", labels: { app: "db" } }, 5432), "the cache pods may reach any pod");
  for (const r of npv.extraIngress ?? []) check(np.spec.ingress.some((x) => same(x, r)), "an extraIngress rule is missing");
  for (const r of npv.extraEgress ?? []) check(np.spec.egress.some((x) => same(x, r)), "an extraEgress rule is missing");
  check(np.spec.ingress.length === 1 + ((npv.admin.namespaces ?? []).length ? 1 : 0) + (npv.extraIngress ?? []).length, "the NetworkPolicy has unexpected ingress rules");
  check(np.spec.egress.length === 3 + (npv.extraEgress ?? []).length, "the NetworkPolicy has unexpected egress rules");
  if (hasClientLabels) {
    const l = Object.keys(clientLabels).sort().map((k) => `${k}=${clientLabels[k]}`).join(",");
    check(notes.includes(`pods labelled ${l}`), `NOTES.txt does not name the client label ${l}`);
  }
} else if (!npv.enabled) {
  check(notes.includes("The NetworkPolicy is off"), "NOTES.txt does not say the NetworkPolicy is off");
}

// ---- 11. PrometheusRule and the Grafana dashboard ---------------------------------
const rules = byKind("PrometheusRule");
const prv = values.metrics.prometheusRule;
check(rules.length === (prv.enabled ? 1 : 0), `metrics.prometheusRule.enabled is ${prv.enabled} but ${rules.length} PrometheusRules are rendered`);
for (const r of rules) {
  check(r.apiVersion === "monitoring.coreos.com/v1", "the PrometheusRule is not monitoring.coreos.com/v1");
  check(r.metadata.namespace === (prv.namespace || namespace), "the PrometheusRule is not in its namespace");
  for (const [k, v] of Object.entries(prv.labels ?? {})) check(r.metadata.labels?.[k] === v, `the PrometheusRule lacks label ${k}`);
  const all = r.spec.groups.flatMap((g) => g.rules);
  const alerts = all.map((x) => x.alert);
  for (const a of ["RingcacheNodeDown", "RingcacheHitRatioLow", "RingcacheFillErrors", "RingcacheSSDFull", "RingcacheS3ErrorRate"])
    check(alerts.includes(a), `the PrometheusRule has no alert ${a}`);
  const sel = prv.selector || `job="${regular[0]?.metadata.name}",namespace="${namespace}"`;
  const own = all.filter((x) => x.alert?.startsWith("Ringcache") && !(prv.additionalRules ?? []).some((a) => a.alert === x.alert));
  for (const x of own) {
    check(typeof x.expr === "string" && x.expr.includes(`{${sel}`), `alert ${x.alert} does not select the release's series (${sel})`);
    check(/^[0-9]+[smh]$/.test(x.for ?? ""), `alert ${x.alert} has no 'for'`);
    check(same(x.labels, prv.alertLabels), `alert ${x.alert} does not carry alertLabels`);
    check(x.annotations?.summary && x.annotations?.description, `alert ${x.alert} lacks a summary or description`);
  }
  const exprOf = (a) => all.find((x) => x.alert === a)?.expr ?? "";
  check(exprOf("RingcacheHitRatioLow").includes(`< ${prv.hitRatioBelow}`), "RingcacheHitRatioLow does not use hitRatioBelow");
  check(exprOf("RingcacheHitRatioLow").includes(`>= ${prv.hitRatioMinGetsPerSecond}`), "RingcacheHitRatioLow does not use hitRatioMinGetsPerSecond");
  check(exprOf("RingcacheS3ErrorRate").includes(`> ${prv.s3ErrorRatioAbove}`), "RingcacheS3ErrorRate does not use s3ErrorRatioAbove");
  check(exprOf("RingcacheSSDFull").includes(`>= ${prv.ssdFullRatio}`), "RingcacheSSDFull does not use ssdFullRatio");
  for (const a of prv.additionalRules ?? []) check(all.some((x) => same(x, a)), `additional rule ${a.alert ?? a.record} missing`);
  // the ServiceMonitor's job label is the regular Service's name: the default selector must name it
  if (!prv.selector && byKind("ServiceMonitor").length) check(sel.includes(`job="${regular[0]?.metadata.name}"`), "the rules' job is not the scraped Service");
}
const gdv = values.metrics.grafanaDashboard;
const dashCMs = byKind("ConfigMap").filter((c) => c !== cm);
check(dashCMs.length === (gdv.enabled ? 1 : 0), `metrics.grafanaDashboard.enabled is ${gdv.enabled} but ${dashCMs.length} dashboard ConfigMaps are rendered`);
for (const d of dashCMs) {
  check(d.metadata.namespace === (gdv.namespace || namespace), "the dashboard ConfigMap is not in its namespace");
  for (const [k, v] of Object.entries(gdv.labels ?? {})) check(d.metadata.labels?.[k] === v, `the dashboard ConfigMap lacks label ${k}=${v}`);
  check(d.metadata.labels?.grafana_dashboard === "1", "the dashboard ConfigMap lacks grafana_dashboard: \"1\" (the sidecar's default label)");
  for (const [k, v] of Object.entries(gdv.annotations ?? {})) check(d.metadata.annotations?.[k] === v, `the dashboard ConfigMap lacks annotation ${k}`);
  const files = Object.keys(d.data ?? {});
  check(files.length === 1 && files[0].endsWith(".json"), "the dashboard ConfigMap must hold one .json file");
  let dash;
  try {
    dash = JSON.parse(d.data[files[0]]);
  } catch (e) {
    failures.push(`the dashboard is not JSON: ${e.message}`);
  }
  if (dash) {
    check(dash.uid && dash.title && Array.isArray(dash.panels) && dash.panels.length >= 10, "the dashboard has no uid, title or panels");
    for (const pn of dash.panels ?? []) check((pn.targets ?? []).length && pn.targets.every((t) => t.expr), `dashboard panel ${pn.title} has no expression`);
  }
}

// ---- 12. what each scenario sets ------------------------------------------------
const kinds = objects.map((o) => o.kind).sort().join(",");
const expect = {
  default: () => {
    check(kinds === "ConfigMap,NetworkPolicy,PodDisruptionBudget,Service,Service,ServiceAccount,StatefulSet", `default renders ${kinds}`);
    check(same(ctr.resources, presets.medium), "default resources are not the medium preset");
    check(pod.spec.terminationGracePeriodSeconds === 30, "default grace is not the 10 s drain + 20");
    check(ctr.image === "ringcache:0.1.0" && !pod.spec.imagePullSecrets, "default image is not ringcache:<appVersion>");
    check(claim?.spec.resources.requests.storage === "100Gi", "default PVC is not 100Gi");
    check(sc === "RuntimeDefault" && conf.get("io") === "auto", "default is not RuntimeDefault + io auto");
    check(conf.get("threads") === "2" && conf.get("ram-capacity") === "2048MiB", "default threads/ram-capacity not derived from resources");
  },
  hostpath: () => {
    check(podVol?.hostPath?.path === "/mnt/nvme0/ringcache", "hostPath volume missing");
    check(pod.spec.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution, "hostPath without hard anti-affinity");
    check(pod.spec.nodeSelector?.["ringcache.io/nvme"] === "true" && pod.spec.tolerations?.length === 1, "nodeSelector/tolerations not rendered");
  },
  emptydir: () => {
    check(podVol?.emptyDir?.sizeLimit === "20Gi", "emptyDir volume missing");
    check(conf.get("no-sync") === "true" && conf.get("io") === "threads", "no-sync / io threads not rendered");
    check(byKind("PodDisruptionBudget").length === 0, "pdb.enabled false still renders a PDB");
    check(!pod.spec.affinity, "podAntiAffinity '' still renders an affinity");
    check(same(ctr.resources, presets.small) && conf.get("threads") === "1", "the small preset is not rendered");
    check(byKind("NetworkPolicy").length === 0, "networkPolicy.enabled false still renders a NetworkPolicy");
  },
  "seccomp-localhost": () => {
    check(sc === "Localhost" && psc.seccompProfile.localhostProfile === "ringcache/ringcached-io-uring.json", "Localhost profile not rendered");
    check(conf.get("io") === "io_uring", "io_uring not rendered");
  },
  "secrets-inline": () => {
    check(secrets.length === 1, `expected the chart's one Secret, found ${secrets.length}`);
    const d = secrets[0]?.data ?? {};
    check(Buffer.from(d.AWS_SECRET_ACCESS_KEY ?? "", "base64").toString() === values.s3.credentials.secretAccessKey, "S3 secret key not stored in the Secret");
    check(Buffer.from(d["tenants.conf"] ?? "", "base64").toString() === values.tenants.file, "tenants file not stored in the Secret");
    check(conf.get("s3-endpoint") === values.s3.endpoint && conf.get("s3-region") === values.s3.region, "endpoint/region not in config");
    const np = byKind("NetworkPolicy")[0];
    check(np && admits(np, "egress", { ip: "198.51.100.1" }, 443) && !admits(np, "egress", { ip: "198.51.100.1" }, 80), "S3 egress is not https' 443");
    check(pod.metadata.annotations?.["checksum/secret"], "no checksum/secret annotation (pods would not roll on a secret change)");
  },
  "secrets-existing": () => {
    check(secrets.length === 0, "existing Secrets given, but the chart still renders one");
    const names = ctr.env.filter((e) => e.valueFrom?.secretKeyRef).map((e) => e.valueFrom.secretKeyRef.name);
    const vols = pod.spec.volumes.filter((v) => v.secret).map((v) => v.secret.secretName);
    check(names.includes("s3-creds") && vols.includes("ringcache-peer") && vols.includes("ringcache-tenants"), "existing Secrets are not referenced");
  },
  monitoring: () => {
    check(byKind("ServiceMonitor").length === 1, "serviceMonitor.enabled renders no ServiceMonitor");
    check(pod.metadata.annotations?.["prometheus.io/port"] === String(adminPort), "prometheus.io annotations missing");
    check(pod.spec.topologySpreadConstraints?.[0]?.topologyKey === "topology.kubernetes.io/zone", "topology spread missing");
    check(ctr.resources.limits.cpu === 4 && ctr.resources.requests.cpu === "3500m", "resources not rendered as given");
    check(pod.spec.terminationGracePeriodSeconds === 45, "an explicit grace is not kept");
    check(byKind("PrometheusRule")[0]?.metadata.labels?.release === "prometheus", "PrometheusRule labels not rendered");
    check(byKind("PrometheusRule")[0]?.spec.groups[0].rules.some((r) => r.alert === "RingcacheManyConnections"), "additionalRules not rendered");
    check(dashCMs[0]?.metadata.namespace === "grafana" && dashCMs[0]?.metadata.annotations?.grafana_folder === "Storage", "the dashboard's namespace / folder not rendered");
    check(conf.get("threads") === "8", "config.threads does not override the derived value");
    check(conf.get("log-level") === "debug" && conf.get("fill-deadline") === "30s", "config values not rendered");
    check(byKind("ServiceAccount").length === 0 && pod.spec.serviceAccountName === "ci-runner", "existing ServiceAccount not used");
    check(sts.metadata.name === "cache", "fullnameOverride not applied");
    check(byKind("PodDisruptionBudget")[0]?.spec.maxUnavailable === "25%", "pdb percentage not rendered");
  },
  tls: () => {
    check(tlsOn && conf.get("tls-cert") === "/etc/ringcache/tls/tls.crt" && conf.get("tls-ca") === "/etc/ringcache/tls/ca.crt", "TLS paths not rendered");
    check(secrets.length === 2 && secrets.some((s) => s.type === "kubernetes.io/tls"), "expected the chart's Secret and its TLS Secret");
    check(byKind("ServiceMonitor")[0]?.spec.endpoints[0]?.tlsConfig?.serverName === `ringcache.${namespace}.svc.cluster.local`, "default scrape serverName is not the regular Service's FQDN");
  },
  sre: () => {
    check(ctr.image === "registry.internal.example.com/platform/ringcache@sha256:6f1c2b7e9d3a5c8b0e4f7a2d9c1b3e5f7a9c2e4b6d8f0a1c3e5b7d9f1a3c5e7b",
      `global.imageRegistry + digest not rendered: ${ctr.image}`);
    check(same(pod.spec.imagePullSecrets, [{ name: "regcred" }, { name: "mirror" }]), "global and local pull secrets not merged once each");
    check(conf.get("threads") === "2" && conf.get("ram-capacity") === "3072MiB", "1500m / 6Gi do not give 2 threads and a 3072MiB RAM tier");
    check(pod.spec.terminationGracePeriodSeconds === 45, "the grace does not follow a 25 s drain");
    check(sts.spec.updateStrategy.rollingUpdate?.partition === 2, "the partition is not rendered");
    check(sts.spec.persistentVolumeClaimRetentionPolicy?.whenScaled === "Delete", "the PVC retention policy is not rendered");
    check(pod.spec.priorityClassName === "storage-critical", "priorityClassName not rendered");
    check(pod.spec.containers.map((c) => c.name).join() === "ringcached,disk-usage" && pod.spec.initContainers?.[0]?.name === "wait-for-disk",
      "sidecar / init container not rendered");
    check(ctr.volumeMounts.some((m) => m.mountPath === "/scratch") && pod.spec.volumes.some((v) => v.name === "scratch"), "extra volume not mounted");
    check(objects.every((o) => o.metadata.labels?.["cost-center"] === "4711" && o.metadata.annotations?.owner === "sre@example.com"),
      "commonLabels / commonAnnotations missing on some object");
    check(byKind("Service").find((x) => x.metadata.name === "ringcache")?.metadata.annotations?.owner === "sre@example.com", "the Service's annotations lost commonAnnotations");
    const np = byKind("NetworkPolicy")[0];
    check(np && admits(np, "egress", { ip: "10.1.2.3" }, 9000) && !admits(np, "egress", { ip: "10.1.2.3" }, 443), "S3 egress is not the endpoint's port 9000");
    check(np && admits(np, "ingress", { ip: "10.20.3.4" }, 7070) && admits(np, "egress", { ip: "10.30.0.10" }, 8200), "extra rules not effective");
  },
  s3api: () => {
    const svc = byKind("Service").find((x) => x.metadata.name === sts.metadata.name);
    check(svc?.spec.ports.some((p) => p.name === "s3api" && p.port === 9000), "the regular Service has no S3 API port 9000");
    const np = byKind("NetworkPolicy")[0];
    check(np && admits(np, "ingress", { ns: "spark", labels: {} }, 9000), "a pod of the client namespace spark cannot reach the S3 API port");
    check(np && !admits(np, "ingress", { ns: "elsewhere", labels: {} }, 9000), "any pod reaches the S3 API port");
    check(notes.includes(`--endpoint-url http://${sts.metadata.name}.${namespace}.svc:9000`), "NOTES.txt does not give the S3 endpoint URL");
    check(notes.includes("s3api_access_key_id"), "NOTES.txt does not say S3 clients sign with a tenant's S3 API keys");
  },
  compute: () => {
    const dep = computeObjects.find((o) => o.kind === "Deployment");
    check(dep && computeObjects.some((o) => o.kind === "HorizontalPodAutoscaler"), "compute.enabled with autoscaling renders no Deployment and HPA");
    const ccm = computeObjects.find((o) => o.kind === "ConfigMap");
    const users = ccm?.data?.["users.conf"] ?? "";
    check(users.includes("[user default]\nnetworks = 10.0.0.0/8, 127.0.0.1\nreadonly = 1") &&
      users.includes("[user writer]\npassword_sha256_hex = 2bb8"), `compute users file not rendered: ${users}`);
    check(ccm?.data?.["server.conf"].includes("warehouse = s3://bucket/warehouse/"), "compute warehouse not rendered");
  },
  "tls-existing": () => {
    check(secrets.length === 0, "existing Secrets given, but the chart still renders one");
    check(tlsOn && !conf.has("tls-ca"), "existingSecretHasCA false still sets tls-ca");
    const v = pod.spec.volumes.find((x) => x.secret?.secretName === "ringcache-tls");
    check(v && !v.secret.items.some((it) => it.key === "ca.crt"), "the existing TLS Secret is not mounted, or ca.crt is asked for");
    check(notes.includes("--cacert YOUR-CA.crt"), "NOTES.txt does not tell the reader to bring the CA");
  },
};

// ---- 11. compute servers --------------------------------------------------------
{
  const cKind = (k) => computeObjects.filter((o) => o.kind === k);
  const dep = cKind("Deployment")[0];
  if (dep) {
    const cpod = dep.spec.template;
    const cctr = cpod.spec.containers[0];
    const csvc = cKind("Service").find((o) => o.spec.clusterIP !== "None");
    const chl = cKind("Service").find((o) => o.spec.clusterIP === "None");
    const ccm = cKind("ConfigMap")[0];
    const port = cctr.ports.find((p) => p.name === "http")?.containerPort;
    check(matches(dep.spec.selector.matchLabels, cpod.metadata.labels), "the compute Deployment does not select its pods");
    check(!matches(podLabels, cpod.metadata.labels) && !matches(cpod.metadata.labels, podLabels) &&
      !matches(dep.spec.selector.matchLabels, podLabels), "compute and cache-node pods' selectors overlap");
    check(cpod.metadata.labels["ringcache.io/client"] === "true", "compute pods lack the client label the NetworkPolicy lets in");
    check(csvc && matches(csvc.spec.selector, cpod.metadata.labels), "the compute Service does not select the compute pods");
    check(csvc?.spec.ports.some((p) => p.port === port && p.targetPort === "http"), "the compute Service does not target the http port");
    for (const pr of ["startupProbe", "livenessProbe", "readinessProbe"])
      check(cctr[pr]?.httpGet?.path === "/ping" && cctr[pr]?.httpGet?.port === "http", `compute ${pr} is not GET /ping`);
    check(cctr.args.join(" ") === "server --config /etc/ringcache/compute/server.conf", "compute args are not ringcache server --config");
    const sconf = new Map((ccm?.data?.["server.conf"] ?? "").split("\n").filter((l) => l.includes(" = "))
      .map((l) => l.split(" = ")));
    check(sconf.get("http-port") === String(port) && sconf.get("listen") === "0.0.0.0", "compute config: listen and port");
    const cache = sconf.get("cache") ?? "";
    check(cache === `dns:${headless?.metadata.name}.${namespace}.svc.${values.clusterDomain}:${protoPort}` || values.compute?.cache === cache,
      `compute config's cache is not this release's headless Service: ${cache}`);
    check(!("users.conf" in (ccm?.data ?? {})) === !sconf.has("users"), "compute users file and its key disagree");
    // the compute cluster: members by the headless Service's records, the secret from a mounted Secret
    const cl = { enabled: true, name: "default", key: "cluster-secret", ...(values.compute?.cluster ?? {}) };
    if (cl.enabled) {
      check(chl && matches(chl.spec.selector, cpod.metadata.labels) && chl.spec.ports.some((p) => p.port === port),
        "the compute cluster's headless Service does not select the compute pods on the http port");
      check(sconf.get("cluster") === `${cl.name}=dns:${chl?.metadata.name}.${namespace}.svc.${values.clusterDomain}:${port}`,
        `compute config's cluster is not the headless Service: ${sconf.get("cluster")}`);
      const secretName = cl.existingSecret || `${dep.metadata.name}-cluster`;
      const vol = cpod.spec.volumes.find((v) => v.secret?.secretName === secretName);
      const mount = cctr.volumeMounts.find((m) => m.name === vol?.name);
      check(vol && mount && sconf.get("cluster-secret-file") === `${mount.mountPath}/${cl.key}`,
        `the cluster secret file is not the mounted Secret ${secretName}: ${sconf.get("cluster-secret-file")}`);
      const own = computeObjects.find((o) => o.kind === "Secret" && o.metadata.name === secretName);
      check(cl.existingSecret ? !own : own && Buffer.from(own.data[cl.key], "base64").toString().length >= 16,
        "the chart's cluster Secret is missing, too short, or rendered beside an existingSecret");
      check(!Object.values(ccm?.data ?? {}).some((t) => own && t.includes(Buffer.from(own.data[cl.key], "base64").toString())),
        "the cluster secret appears in a ConfigMap");
    } else {
      check(!chl && !sconf.has("cluster"), "compute.cluster.enabled=false still renders the cluster");
    }
    check(cctr.securityContext?.readOnlyRootFilesystem === true && cctr.securityContext?.allowPrivilegeEscalation === false,
      "compute container is not read-only / unprivileged");
    if (cKind("HorizontalPodAutoscaler").length)
      check(dep.spec.replicas === undefined && cKind("HorizontalPodAutoscaler")[0].spec.scaleTargetRef.name === dep.metadata.name,
        "the HPA does not own the compute Deployment's replicas");
  }
}

if (check(expect[scenario], `no expectations for scenario ${scenario}`)) expect[scenario]();

if (failures.length) {
  for (const f of failures) console.error(`FAIL [${scenario}] ${f}`);
  process.exit(1);
}
console.log(`ok [${scenario}] ${objects.length} objects valid (kubernetes-models ${kinds}); chart checks hold`);
