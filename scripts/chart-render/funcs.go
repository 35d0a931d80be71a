package main

// helm's template functions on top of sprig (pkg/engine/funcs.go and engine.go): the YAML/JSON
// converters, include, tpl, required, fail and lookup (empty: no cluster), plus .Files and
// .Capabilities. required/fail wrap their message the way helm does, so errors read the same.

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"path"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	yaml2 "gopkg.in/yaml.v2"
	"gopkg.in/yaml.v3"
)

const (
	errStart = "HELM_ERR_START"
	errEnd   = "HELM_ERR_END"
	// Deeper include recursion than this is a template loop (helm's recursionMaxNums).
	maxIncludeDepth = 1000
)

// toYAML writes as helm's sigs.k8s.io/yaml does: through JSON, keys sorted, no trailing newline.
func toYAML(v interface{}) string {
	out, err := marshalYAML(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(out, "\n")
}

func marshalYAML(v interface{}) (string, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	var generic interface{}
	if err := yaml2.Unmarshal(j, &generic); err != nil {
		return "", err
	}
	out, err := yaml2.Marshal(generic)
	return string(out), err
}

func fromYAML(s string) map[string]interface{} {
	m, err := parseYAMLMap([]byte(s), "fromYaml")
	if err != nil {
		return map[string]interface{}{"Error": err.Error()}
	}
	return m
}

func fromYAMLArray(s string) []interface{} {
	var raw interface{}
	if err := yaml.Unmarshal([]byte(s), &raw); err != nil {
		return []interface{}{err.Error()}
	}
	v, err := jsonShaped(raw)
	if list, ok := v.([]interface{}); ok && err == nil {
		return list
	}
	return []interface{}{"fromYamlArray: not a list"}
}

func toJSON(v interface{}) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

func fromJSON(s string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func fromJSONArray(s string) []interface{} {
	var list []interface{}
	if err := json.Unmarshal([]byte(s), &list); err != nil {
		return []interface{}{err.Error()}
	}
	return list
}

func unsupported(name string) func(...interface{}) (string, error) {
	return func(...interface{}) (string, error) {
		return "", errors.New(name + " is not supported by chart-render; use helm")
	}
}

// funcMap is sprig's text functions without env/expandenv, plus helm's own.
func funcMap(t *template.Template, depth map[string]int) template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	f["toYaml"] = toYAML
	f["mustToYaml"] = func(v interface{}) (string, error) {
		out, err := marshalYAML(v)
		return strings.TrimSuffix(out, "\n"), err
	}
	f["toYamlPretty"] = toYAML
	f["fromYaml"] = fromYAML
	f["fromYamlArray"] = fromYAMLArray
	f["toJson"] = toJSON
	f["mustToJson"] = func(v interface{}) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	}
	f["fromJson"] = fromJSON
	f["fromJsonArray"] = fromJSONArray
	f["toToml"] = unsupported("toToml")
	f["fromToml"] = unsupported("fromToml")
	f["lookup"] = func(string, string, string, string) (map[string]interface{}, error) {
		return map[string]interface{}{}, nil
	}
	f["getHostByName"] = func(string) string { return "" }
	f["required"] = func(msg string, v interface{}) (interface{}, error) {
		if s, ok := v.(string); v == nil || (ok && s == "") {
			return v, errors.New(errStart + msg + errEnd)
		}
		return v, nil
	}
	f["fail"] = func(msg string) (string, error) { return "", errors.New(errStart + msg + errEnd) }
	f["include"] = func(name string, data interface{}) (string, error) {
		if depth[name] >= maxIncludeDepth {
			return "", errors.New("rendering template has a nested reference name: " + name)
		}
		depth[name]++
		defer func() { depth[name]-- }()
		var b strings.Builder
		err := t.ExecuteTemplate(&b, name, data)
		return b.String(), err
	}
	f["tpl"] = func(text string, data interface{}) (string, error) {
		clone, err := t.Clone()
		if err != nil {
			return "", err
		}
		clone.Option("missingkey=zero")
		clone.Funcs(funcMap(clone, depth))
		clone, err = clone.New(t.Name()).Parse(text)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		if err := clone.Execute(&b, data); err != nil {
			return "", err
		}
		return strings.ReplaceAll(b.String(), "<no value>", ""), nil
	}
	return f
}

// files is .Files: the chart's files outside templates/ and the chart's own metadata.
type files map[string][]byte

func (f files) GetBytes(name string) []byte { return f[name] }
func (f files) Get(name string) string      { return string(f[name]) }

func (f files) Lines(name string) []string {
	if f[name] == nil {
		return []string{}
	}
	return strings.Split(string(f[name]), "\n")
}

func (f files) Glob(pattern string) files {
	out := files{}
	for name, data := range f {
		if ok, _ := path.Match(pattern, name); ok {
			out[name] = data
		}
	}
	return out
}

func (f files) sortedNames() []string {
	names := make([]string, 0, len(f))
	for name := range f {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func (f files) AsConfig() string {
	m := map[string]string{}
	for _, name := range f.sortedNames() {
		m[path.Base(name)] = string(f[name])
	}
	return toYAML(m)
}

func (f files) AsSecrets() string {
	m := map[string]string{}
	for _, name := range f.sortedNames() {
		m[path.Base(name)] = base64.StdEncoding.EncodeToString(f[name])
	}
	return toYAML(m)
}

// apiVersions is .Capabilities.APIVersions: "group/version" and "group/version/Kind" entries.
type apiVersions []string

func (a apiVersions) Has(v string) bool {
	for _, x := range a {
		if x == v {
			return true
		}
	}
	return false
}

type kubeVersion struct {
	Version, Major, Minor string
}

func (k kubeVersion) String() string     { return k.Version }
func (k kubeVersion) GitVersion() string { return k.Version }

type capabilities struct {
	KubeVersion kubeVersion
	APIVersions apiVersions
	HelmVersion map[string]string
}

// builtinKinds: the API versions a cluster always serves, with the kinds charts ask about.
var builtinKinds = map[string][]string{
	"v1":                           {"ConfigMap", "Secret", "Service", "ServiceAccount", "Pod", "PersistentVolumeClaim", "Namespace"},
	"apps/v1":                      {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"},
	"autoscaling/v1":               {"HorizontalPodAutoscaler"},
	"autoscaling/v2":               {"HorizontalPodAutoscaler"},
	"batch/v1":                     {"Job", "CronJob"},
	"policy/v1":                    {"PodDisruptionBudget"},
	"networking.k8s.io/v1":         {"Ingress", "IngressClass", "NetworkPolicy"},
	"rbac.authorization.k8s.io/v1": {"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"},
	"storage.k8s.io/v1":            {"StorageClass"},
	"coordination.k8s.io/v1":       {"Lease"},
	"apiextensions.k8s.io/v1":      {"CustomResourceDefinition"},
}

func defaultAPIVersions(extra []string) apiVersions {
	var out apiVersions
	for gv, kinds := range builtinKinds {
		out = append(out, gv)
		for _, k := range kinds {
			out = append(out, gv+"/"+k)
		}
	}
	return append(out, extra...)
}
