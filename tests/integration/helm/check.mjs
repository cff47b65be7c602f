// SPDX-License-Identifier: Apache-2.0
//
// check.mjs: checks one rendering of the ringcache chart (the JSON written by
// helm/tools/render). Every object is validated with npm kubernetes-models
// (types and required fields of the Kubernetes API); then the things that
// matter for a ring of cache nodes are checked across objects: the headless
// Service selects the StatefulSet's pods, publishes not-ready addresses and
// lists only the protocol port; the membership source names the headless
// Service's FQDN; probes hit the admin port; secrets are neither in the
// ConfigMap nor written literally into the pod spec; every Secret reference
// resolves; the termination grace exceeds the drain deadline; capacities fit
// the pod's memory and volume. Scenario-specific expectations follow.
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
const byKind = (k) => objects.filter((o) => o.kind === k);
const one = (k) => {
  const l = byKind(k);
  check(l.length === 1, `expected exactly one ${k}, found ${l.length}`);
  return l[0];
};
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
const quantityMiB = (q) => {
  const r = /^(\d+)(Mi|Gi)$/.exec(q ?? "");
  if (!r) return NaN;
  return Number(r[1]) * (r[2] === "Gi" ? 1024 : 1);
};

const sts = one("StatefulSet");
const cm = one("ConfigMap");
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
}

// ---- 5. probes ---------------------------------------------------------------
for (const [probe, path] of [["livenessProbe", "/healthz"], ["readinessProbe", "/readyz"], ["startupProbe", "/healthz"]]) {
  const p = ctr[probe];
  if (!check(p?.httpGet, `${probe} is not an HTTP GET`)) continue;
  check(p.httpGet.path === path, `${probe} asks ${p.httpGet.path}, expected ${path}`);
  check(containerPort(p.httpGet.port)?.containerPort === adminPort, `${probe} does not hit the admin port`);
}

// ---- 6. secrets: not in the ConfigMap, not literal in the pod ------------------
const secretOptions = ["s3-access-key", "s3-secret-key", "peer-token"];
for (const k of secretOptions) check(!conf.has(k), `secret option ${k} is in the ConfigMap`);
const secretValues = [
  values.s3?.credentials?.accessKeyId, values.s3?.credentials?.secretAccessKey,
  values.s3?.credentials?.sessionToken, values.peerToken?.value,
  ...[...(values.tenants?.file ?? "").matchAll(/^\s*(?:token|aws_secret_access_key|aws_access_key_id)\s*=\s*(\S+)/gm)].map((m) => m[1]),
].filter((v) => typeof v === "string" && v.length >= 8);
for (const o of objects) {
  if (o.kind === "Secret") continue;
  const text = JSON.stringify(o);
  for (const v of secretValues) check(!text.includes(v), `${o.kind}/${o.metadata.name} contains a secret value in plain text`);
}
for (const e of ctr.env) check(!("value" in e) || !/^AWS_(SECRET|ACCESS|SESSION)/.test(e.name), `env ${e.name} carries a literal value`);
for (const a of ctr.args) check(!secretValues.includes(a), "a secret is written literally into the container's args");
const pt = ctr.args.indexOf("--peer-token");
if (pt >= 0) {
  check(ctr.args[pt + 1] === "$(RINGCACHE_PEER_TOKEN)", "--peer-token is not taken from the RINGCACHE_PEER_TOKEN env var");
  check(ctr.env.find((e) => e.name === "RINGCACHE_PEER_TOKEN")?.valueFrom?.secretKeyRef, "RINGCACHE_PEER_TOKEN is not from a Secret");
}
// every secretKeyRef / secret volume resolves: to a rendered Secret that has the key, or to a named existing Secret
const existing = new Set([values.s3?.credentials?.existingSecret, values.tenants?.existingSecret,
  values.peerToken?.existingSecret].filter(Boolean));
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
if (conf.has("tenants")) {
  const m = mountFor(conf.get("tenants"));
  const vol = pod.spec.volumes.find((v) => v.name === m?.name);
  check(vol?.secret, "the tenants file is not mounted from a Secret");
  check(m?.readOnly === true, "the tenants mount is not read-only");
  check(ctr.args.includes("--peer-token"), "tenants are on but no --peer-token: nodes could not PUT blocks to each other");
}

// ---- 7. termination, capacities, storage, security -----------------------------
const drain = seconds(conf.get("drain-timeout"));
check(Number.isFinite(drain), `drain-timeout ${conf.get("drain-timeout")} is not a duration`);
check(pod.spec.terminationGracePeriodSeconds > drain,
  `terminationGracePeriodSeconds ${pod.spec.terminationGracePeriodSeconds} does not exceed drain-timeout ${drain}s`);
const memLimit = quantityMiB(ctr.resources?.limits?.memory);
check(Number.isFinite(memLimit), "no memory limit in Mi/Gi");
check(mib(conf.get("ram-capacity")) < memLimit, "ram-capacity is not below the memory limit");
check(quantityMiB(ctr.resources?.requests?.memory) === memLimit, "memory request differs from the limit");
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
  }
  check(sm.spec.namespaceSelector?.matchNames?.includes(namespace), "ServiceMonitor does not look in the release namespace");
}
for (const o of objects) {
  for (const l of ["app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version", "app.kubernetes.io/managed-by"]) {
    check(o.metadata.labels?.[l], `${o.kind}/${o.metadata.name} lacks label ${l}`);
  }
}

// ---- 9. what each scenario sets -------------------------------------------------
const kinds = objects.map((o) => o.kind).sort().join(",");
const expect = {
  default: () => {
    check(kinds === "ConfigMap,PodDisruptionBudget,Service,Service,ServiceAccount,StatefulSet", `default renders ${kinds}`);
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
    check(pod.metadata.annotations?.["checksum/secret"], "no checksum/secret annotation (pods would not roll on a secret change)");
  },
  "secrets-existing": () => {
    check(secrets.length === 0, "existing Secrets given, but the chart still renders one");
    const names = ctr.env.filter((e) => e.valueFrom?.secretKeyRef).map((e) => e.valueFrom.secretKeyRef.name);
    check(names.includes("s3-creds") && names.includes("ringcache-peer"), "existing Secrets are not referenced");
  },
  monitoring: () => {
    check(byKind("ServiceMonitor").length === 1, "serviceMonitor.enabled renders no ServiceMonitor");
    check(pod.metadata.annotations?.["prometheus.io/port"] === String(adminPort), "prometheus.io annotations missing");
    check(pod.spec.topologySpreadConstraints?.[0]?.topologyKey === "topology.kubernetes.io/zone", "topology spread missing");
    check(ctr.resources.limits.cpu === "4", "cpuLimit not rendered");
    check(conf.get("threads") === "8", "config.threads does not override the derived value");
    check(conf.get("log-level") === "debug" && conf.get("fill-deadline") === "30s", "config values not rendered");
    check(byKind("ServiceAccount").length === 0 && pod.spec.serviceAccountName === "ci-runner", "existing ServiceAccount not used");
    check(sts.metadata.name === "cache", "fullnameOverride not applied");
    check(byKind("PodDisruptionBudget")[0]?.spec.maxUnavailable === "25%", "pdb percentage not rendered");
  },
};
if (check(expect[scenario], `no expectations for scenario ${scenario}`)) expect[scenario]();

if (failures.length) {
  for (const f of failures) console.error(`FAIL [${scenario}] ${f}`);
  process.exit(1);
}
console.log(`ok [${scenario}] ${objects.length} objects valid (kubernetes-models ${kinds}); chart checks hold`);
