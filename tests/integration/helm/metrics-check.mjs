// SPDX-License-Identifier: Apache-2.0
//
// metrics-check.mjs: every metric the chart's PrometheusRule and Grafana
// dashboard name must be one a real ringcached exports. run.sh gives it the
// /metrics text of a ringcached started on a rendered config (so the list is
// the daemon's own, whatever metrics it gains) and a rendering with the rule
// and the dashboard turned on. From every alert and recording expression and
// every dashboard target and variable query it takes the metric names (PromQL
// with strings, label matchers, ranges, grouping clauses, numbers, keywords
// and function calls taken out), the label matchers of each selector and the
// labels of by/without clauses, and requires:
//   - each metric name is a series name on /metrics, or `up` (Prometheus makes
//     that one per target);
//   - each matcher's label is one the metric carries on /metrics, or a label
//     Prometheus adds when it scrapes a pod (job, namespace, pod, ...); an `=`
//     matcher's value is one the metric has (tier="ssd");
//   - each grouping label is carried by a metric of the expression, a target
//     label, or `le` over a histogram's buckets;
//   - every expression names at least one metric (none can pass by being empty).
//
// usage: node metrics-check.mjs METRICS.txt OBJECTS.json
// Exit status 0 when everything holds, 1 with one line per failure.
import { readFileSync } from "node:fs";

const [metricsFile, objectsFile] = process.argv.slice(2);
if (!objectsFile) {
  console.error("usage: node metrics-check.mjs METRICS.txt OBJECTS.json");
  process.exit(2);
}
const failures = [];
const check = (cond, msg) => {
  if (!cond) failures.push(msg);
  return !!cond;
};

// ---- what the node exports: series names, and the labels and values of each
const exported = new Map(); // name -> Map(label -> Set(values))
for (const line of readFileSync(metricsFile, "utf8").split("\n")) {
  if (!line || line.startsWith("#")) continue;
  const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s/.exec(line);
  if (!check(m, `/metrics line is not a sample: ${line}`)) continue;
  const labels = exported.get(m[1]) ?? new Map();
  exported.set(m[1], labels);
  for (const [, k, v] of (m[3] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
    if (!labels.has(k)) labels.set(k, new Set());
    labels.get(k).add(v);
  }
}
check(exported.size >= 10, `/metrics lists only ${exported.size} series names`);
const prometheusMade = new Set(["up"]);
const targetLabels = new Set(["job", "namespace", "pod", "instance", "service", "container", "endpoint"]);

// ---- the expressions -----------------------------------------------------------
const exprs = []; // [where, expr]
const objects = JSON.parse(readFileSync(objectsFile, "utf8"));
for (const o of objects.filter((x) => x.kind === "PrometheusRule"))
  for (const g of o.spec.groups) for (const r of g.rules) exprs.push([`rule ${r.alert ?? r.record}`, r.expr]);
for (const o of objects.filter((x) => x.kind === "ConfigMap" && !("ringcached.conf" in (x.data ?? {})))) {
  for (const [file, text] of Object.entries(o.data ?? {})) {
    const dash = JSON.parse(text);
    const panels = (dash.panels ?? []).flatMap((p) => [p, ...(p.panels ?? [])]);
    for (const p of panels) for (const t of p.targets ?? []) exprs.push([`${file} panel "${p.title}" ${t.refId}`, t.expr]);
    for (const v of dash.templating?.list ?? []) {
      if (v.type !== "query") continue;
      const q = typeof v.query === "string" ? v.query : v.query?.query;
      const lv = /^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$/.exec(q ?? "");
      if (!check(lv, `${file} variable ${v.name}: not label_values(SELECTOR, LABEL): ${q}`)) continue;
      exprs.push([`${file} variable ${v.name}`, lv[1], lv[2]]);
    }
  }
}
check(exprs.length >= 10, `only ${exprs.length} expressions found: is the rule or the dashboard rendered?`);

const keywords = new Set(["and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
  "group_left", "group_right", "inf", "nan", "atan2"]);
function analyse(where, expr, extraLabel) {
  if (!check(typeof expr === "string" && expr.trim(), `${where}: empty expression`)) return;
  const selectors = []; // [metric or "", [[label, op, value]]]
  // name{matchers} (name optional); strings inside matchers hold no braces here
  let s = expr.replace(/([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{([^}]*)\}/g, (_, name, body) => {
    const ms = [...body.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2], m[3]]);
    check(body.replace(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"/g, "").replace(/[\s,]/g, "") === "",
      `${where}: cannot read the matchers {${body}}`);
    selectors.push([name ?? "", ms]);
    return ` ${name ?? ""} `;
  });
  const grouping = [];
  s = s.replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g, (_, kw, list) => {
    if (kw === "by" || kw === "without" || kw === "on" || kw === "ignoring")
      for (const l of list.split(",").map((x) => x.trim()).filter(Boolean)) grouping.push(l);
    return " ";
  });
  s = s.replace(/"(?:[^"\\]|\\.)*"/g, " ").replace(/\[[^\]]*\]/g, " ")
    .replace(/\b[0-9]+(\.[0-9]+)?(e[+-]?[0-9]+)?\b/gi, " ");
  const names = [];
  for (const m of s.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\()?/g)) {
    if (m[2] || keywords.has(m[1].toLowerCase())) continue; // a function call or a keyword
    names.push(m[1]);
  }
  if (!check(names.length > 0, `${where}: names no metric: ${expr}`)) return;
  for (const n of names)
    check(exported.has(n) || prometheusMade.has(n), `${where}: ${n} is not a metric ringcached exports (${expr})`);
  for (const [name, ms] of selectors) {
    const labels = exported.get(name);
    if (!labels) continue; // reported above, or Prometheus' own
    for (const [l, op, v] of ms) {
      if (targetLabels.has(l)) continue;
      if (!check(labels.has(l), `${where}: ${name} has no label ${l} on /metrics`)) continue;
      if (op === "=") check(labels.get(l).has(v), `${where}: ${name}{${l}="${v}"} matches no series on /metrics (values: ${[...labels.get(l)]})`);
    }
  }
  const carried = new Set(names.flatMap((n) => [...(exported.get(n)?.keys() ?? [])]));
  for (const l of [...grouping, ...(extraLabel ? [extraLabel] : [])])
    check(targetLabels.has(l) || carried.has(l), `${where}: no metric of the expression carries the label ${l}`);
}
for (const [where, expr, extra] of exprs) analyse(where, expr, extra);

if (failures.length) {
  for (const f of failures) console.error(`FAIL [metrics] ${f}`);
  process.exit(1);
}
console.log(`ok [metrics] ${exprs.length} rule and dashboard expressions name only metrics a live ringcached exports (${exported.size} series names on its /metrics)`);
