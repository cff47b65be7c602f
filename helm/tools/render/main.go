// SPDX-License-Identifier: Apache-2.0
//
// render: a small stand-in for `helm template`, for CI on machines without a
// helm binary. It loads a chart folder (Chart.yaml, values.yaml,
// values.schema.json, templates/), merges values files over the chart's
// defaults, validates the result against values.schema.json, and renders every
// template with Go's text/template, sprig, and the few functions Helm adds
// that the ringcache chart uses (include, required, toYaml, fromYaml). It writes the
// manifests as a YAML stream (each document headed by `# Source:`, like helm)
// and, on request, as a JSON array of objects, the merged values as JSON, and
// the rendered NOTES.txt.
//
// It mirrors Helm where the chart could tell the difference: values decode the
// way Helm decodes them (every number a float64, through JSON), toYaml goes
// through JSON and then YAML (go-yaml v2, so sequences sit flush under their
// key), a missing key renders as empty, templates are named
// "<chart>/templates/<file>", and files starting with "_" are partials.
// .Files.Get reads a file of the chart (not under templates/), as Helm's does.
// It is NOT Helm: no dependencies, hooks, lookup, tpl, .Files.Glob, or --set. Users run
// `helm template` / `helm install`; this exists so the chart is checked here.
//
// Build offline (Debian golang-go, golang-github-masterminds-sprig-dev,
// golang-gopkg-yaml.v2-dev, golang-github-xeipuuv-gojsonschema-dev):
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o render .
//
// Exit status: 0 rendered; 1 the chart or the values were refused (the
// message says why: a schema error, a `required` or `fail` message, a
// template error); 2 bad usage.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/ioutil"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/semver"
	"github.com/Masterminds/sprig"
	"github.com/xeipuuv/gojsonschema"
	yaml2 "gopkg.in/yaml.v2"
	yaml3 "gopkg.in/yaml.v3"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var valueFiles, apiVersions listFlag
	chartDir := flag.String("chart", "", "chart folder (holds Chart.yaml)")
	name := flag.String("name", "ringcache", "release name (.Release.Name)")
	namespace := flag.String("namespace", "default", "release namespace (.Release.Namespace)")
	kubeVersion := flag.String("kube-version", "1.29.0", "Kubernetes version for .Capabilities.KubeVersion")
	jsonOut := flag.String("json", "", "also write the objects as a JSON array to this file")
	notesOut := flag.String("notes", "", "also render NOTES.txt into this file")
	valuesOut := flag.String("values-json", "", "also write the merged values (what .Values sees) as JSON to this file")
	flag.Var(&valueFiles, "f", "values file merged over the chart's values.yaml (repeatable; later wins)")
	flag.Var(&apiVersions, "api-versions", "extra API version for .Capabilities.APIVersions.Has (repeatable)")
	flag.Parse()
	if *chartDir == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: render -chart DIR [-f values.yaml]... [-name N] [-namespace NS] [-json FILE] [-values-json FILE] [-notes FILE]")
		os.Exit(2)
	}
	err := run(*chartDir, *name, *namespace, *kubeVersion, valueFiles, apiVersions, *jsonOut, *notesOut, *valuesOut)
	if err != nil {
		fmt.Fprintf(os.Stderr, "render: %v\n", err)
		os.Exit(1)
	}
}

// helmValues decodes YAML the way Helm does: YAML -> JSON -> interface{}, so
// maps are map[string]interface{} and every number is a float64.
func helmValues(text []byte, what string) (map[string]interface{}, error) {
	var raw interface{}
	if err := yaml3.Unmarshal(text, &raw); err != nil {
		return nil, fmt.Errorf("%s: %v", what, err)
	}
	if raw == nil {
		return map[string]interface{}{}, nil
	}
	j, err := json.Marshal(jsonable(raw))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", what, err)
	}
	var out map[string]interface{}
	if err := json.Unmarshal(j, &out); err != nil {
		return nil, fmt.Errorf("%s: the top level must be a map: %v", what, err)
	}
	return out, nil
}

// jsonable turns yaml.v3's map[interface{}]interface{} (non-string keys) into
// string-keyed maps so encoding/json accepts them.
func jsonable(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		for k, e := range t {
			t[k] = jsonable(e)
		}
		return t
	case map[interface{}]interface{}:
		m := make(map[string]interface{}, len(t))
		for k, e := range t {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []interface{}:
		for i, e := range t {
			t[i] = jsonable(e)
		}
		return t
	}
	return v
}

// merge copies src over dst: maps merge key by key, anything else replaces,
// and a null in src deletes the key (Helm's coalescing of user values).
func merge(dst, src map[string]interface{}) {
	for k, sv := range src {
		if sv == nil {
			delete(dst, k)
			continue
		}
		sm, sIsMap := sv.(map[string]interface{})
		dm, dIsMap := dst[k].(map[string]interface{})
		if sIsMap && dIsMap {
			merge(dm, sm)
		} else {
			dst[k] = sv
		}
	}
}

// toYAML is Helm's toYaml: JSON first, then YAML, so whole numbers print as
// integers and keys come out sorted; the trailing newline is trimmed.
func toYAML(v interface{}) string {
	j, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	var back interface{}
	if err := yaml2.Unmarshal(j, &back); err != nil {
		return ""
	}
	out, err := yaml2.Marshal(back)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(out), "\n")
}

// chartFiles is .Files: the chart's files outside templates/, read on demand.
type chartFiles struct{ dir string }

// Get is .Files.Get: the file's text, or "" when it does not exist (as Helm).
// Paths are relative to the chart folder and may not leave it.
func (f chartFiles) Get(name string) (string, error) {
	clean := filepath.Clean(name)
	if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || strings.HasPrefix(clean, "templates/") {
		return "", fmt.Errorf(".Files.Get %q: not a file of the chart outside templates/", name)
	}
	b, err := ioutil.ReadFile(filepath.Join(f.dir, clean))
	if os.IsNotExist(err) {
		return "", nil
	}
	return string(b), err
}

type capabilities struct {
	KubeVersion struct {
		Version, Major, Minor string
	}
	APIVersions apiVersions
}

type apiVersions []string

// Has is .Capabilities.APIVersions.Has: "group/version" or "group/version/Kind".
func (a apiVersions) Has(v string) bool {
	for _, x := range a {
		if x == v {
			return true
		}
	}
	return false
}

// builtinAPIs: the API versions the chart may ask about that every supported
// cluster serves; CRD groups come from -api-versions, as with helm.
var builtinAPIs = []string{"v1", "apps/v1", "policy/v1", "batch/v1", "networking.k8s.io/v1",
	"rbac.authorization.k8s.io/v1", "storage.k8s.io/v1"}

func run(chartDir, name, namespace, kubeVersion string, valueFiles, extraAPIs []string,
	jsonOut, notesOut, valuesOut string) error {
	chartText, err := ioutil.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		return err
	}
	chartMeta, err := helmValues(chartText, "Chart.yaml")
	if err != nil {
		return err
	}
	chartName, _ := chartMeta["name"].(string)
	if chartName == "" {
		return errors.New("Chart.yaml has no name")
	}
	// .Chart fields are capitalised, as helm's chart.Metadata exposes them.
	chart := map[string]interface{}{}
	for k, v := range chartMeta {
		chart[strings.ToUpper(k[:1])+k[1:]] = v
	}

	kv, err := semver.NewVersion(kubeVersion)
	if err != nil {
		return fmt.Errorf("-kube-version %q: %v", kubeVersion, err)
	}
	if c, ok := chartMeta["kubeVersion"].(string); ok && c != "" {
		cons, err := semver.NewConstraint(c)
		if err != nil {
			return fmt.Errorf("Chart.yaml kubeVersion %q: %v", c, err)
		}
		if !cons.Check(kv) {
			return fmt.Errorf("chart requires kubeVersion %s, which is incompatible with Kubernetes %s", c, kubeVersion)
		}
	}
	var caps capabilities
	caps.KubeVersion.Version = "v" + kv.String()
	caps.KubeVersion.Major = fmt.Sprint(kv.Major())
	caps.KubeVersion.Minor = fmt.Sprint(kv.Minor())
	caps.APIVersions = append(apiVersions{}, builtinAPIs...)
	caps.APIVersions = append(caps.APIVersions, extraAPIs...)

	defText, err := ioutil.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		return err
	}
	values, err := helmValues(defText, "values.yaml")
	if err != nil {
		return err
	}
	for _, f := range valueFiles {
		text, err := ioutil.ReadFile(f)
		if err != nil {
			return err
		}
		v, err := helmValues(text, f)
		if err != nil {
			return err
		}
		merge(values, v)
	}

	if schema, err := ioutil.ReadFile(filepath.Join(chartDir, "values.schema.json")); err == nil {
		res, err := gojsonschema.Validate(gojsonschema.NewBytesLoader(schema), gojsonschema.NewGoLoader(values))
		if err != nil {
			return fmt.Errorf("values.schema.json: %v", err)
		}
		if !res.Valid() {
			var msgs []string
			for _, e := range res.Errors() {
				msgs = append(msgs, "- "+e.String())
			}
			return fmt.Errorf("values don't meet the specifications of the schema(s):\n%s", strings.Join(msgs, "\n"))
		}
	} else if !os.IsNotExist(err) {
		return err
	}

	if valuesOut != "" {
		j, err := json.MarshalIndent(values, "", "  ")
		if err != nil {
			return err
		}
		if err := ioutil.WriteFile(valuesOut, append(j, '\n'), 0o644); err != nil {
			return err
		}
	}

	top := map[string]interface{}{
		"Values": values,
		"Chart":  chart,
		"Release": map[string]interface{}{
			"Name": name, "Namespace": namespace, "Service": "Helm",
			"IsInstall": true, "IsUpgrade": false, "Revision": 1,
		},
		"Capabilities": caps,
		"Files":        chartFiles{dir: chartDir},
		"Template": map[string]interface{}{
			"BasePath": chartName + "/templates",
		},
	}

	// Parse every template file into one set, named like helm names them.
	tmplDir := filepath.Join(chartDir, "templates")
	entries, err := ioutil.ReadDir(tmplDir)
	if err != nil {
		return err
	}
	root := template.New("ringcache-render")
	funcs := sprig.TxtFuncMap()
	delete(funcs, "env") // helm removes these two: templates must not read
	delete(funcs, "expandenv")
	funcs["toYaml"] = toYAML
	// Helm's fromYaml: a map decoded as values are (numbers are float64); on
	// bad YAML a map holding only "Error", as Helm returns.
	funcs["fromYaml"] = func(text string) map[string]interface{} {
		m, err := helmValues([]byte(text), "fromYaml")
		if err != nil {
			return map[string]interface{}{"Error": err.Error()}
		}
		return m
	}
	funcs["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil {
			return nil, errors.New(msg)
		}
		if s, ok := v.(string); ok && s == "" {
			return nil, errors.New(msg)
		}
		return v, nil
	}
	includes := 0
	funcs["include"] = func(name string, data interface{}) (string, error) {
		includes++
		if includes > 1000 {
			return "", fmt.Errorf("include %q: nested too deep", name)
		}
		defer func() { includes-- }()
		var b bytes.Buffer
		if err := root.ExecuteTemplate(&b, name, data); err != nil {
			return "", err
		}
		return b.String(), nil
	}
	root.Funcs(funcs).Option("missingkey=zero")

	var files []string
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		text, err := ioutil.ReadFile(filepath.Join(tmplDir, e.Name()))
		if err != nil {
			return err
		}
		tname := chartName + "/templates/" + e.Name()
		if _, err := root.New(tname).Parse(string(text)); err != nil {
			return err
		}
		files = append(files, e.Name())
	}
	sort.Strings(files)

	var stream bytes.Buffer
	var objects []interface{}
	for _, f := range files {
		if strings.HasPrefix(f, "_") || f == "NOTES.txt" {
			continue
		}
		tname := chartName + "/templates/" + f
		var b bytes.Buffer
		if err := root.ExecuteTemplate(&b, tname, top); err != nil {
			return err
		}
		out := strings.ReplaceAll(b.String(), "<no value>", "")
		for _, doc := range splitDocs(out) {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			var obj interface{}
			if err := yaml3.Unmarshal([]byte(doc), &obj); err != nil {
				return fmt.Errorf("%s renders invalid YAML: %v\n%s", tname, err, doc)
			}
			if obj == nil {
				continue // comments only
			}
			objects = append(objects, jsonable(obj))
			fmt.Fprintf(&stream, "---\n# Source: %s\n%s\n", tname, strings.Trim(doc, "\n"))
		}
	}
	if _, err := os.Stdout.Write(stream.Bytes()); err != nil {
		return err
	}
	if jsonOut != "" {
		j, err := json.MarshalIndent(objects, "", "  ")
		if err != nil {
			return fmt.Errorf("converting to JSON: %v", err)
		}
		if err := ioutil.WriteFile(jsonOut, append(j, '\n'), 0o644); err != nil {
			return err
		}
	}
	if notesOut != "" {
		var b bytes.Buffer
		if err := root.ExecuteTemplate(&b, chartName+"/templates/NOTES.txt", top); err != nil {
			return err
		}
		out := strings.ReplaceAll(b.String(), "<no value>", "")
		if err := ioutil.WriteFile(notesOut, []byte(out), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// splitDocs cuts a rendered file at lines that are exactly "---".
func splitDocs(s string) []string {
	var docs []string
	var cur []string
	for _, line := range strings.Split(s, "\n") {
		if strings.TrimRight(line, " ") == "---" {
			docs = append(docs, strings.Join(cur, "\n"))
			cur = nil
			continue
		}
		cur = append(cur, line)
	}
	return append(docs, strings.Join(cur, "\n"))
}
