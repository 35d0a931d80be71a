// chart-render renders a Helm chart the way `helm template` does, for machines without helm:
// Go's text/template with sprig (the engine helm uses) and helm's functions, values and objects.
// Build (Debian: golang-go golang-github-masterminds-sprig-dev golang-gopkg-yaml.v3-dev
// golang-gopkg-yaml.v2-dev): GO111MODULE=off GOPATH=/usr/share/gocode go build -o <out> .
//
//	chart-render template NAME CHART [-f values.yaml]... [--set k=v]... [--set-string k=v]...
//	    [-n NAMESPACE] [--kube-version v1.31.0] [-a group/version[/Kind]]... [-s templates/x.yaml]...
//	chart-render values NAME CHART [same flags]   # the merged .Values as JSON (not a helm command)
//
// values.schema.json is not checked here: callers validate the `values` output (tests use ajv).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/semver"
)

type options struct {
	command, release, chartDir, namespace, kubeVersion  string
	valueFiles, sets, setStrings, apiVersions, showOnly []string
}

func parseArgs(args []string) (*options, error) {
	o := &options{namespace: "default", kubeVersion: "v1.31.0"}
	var positional []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		name, value, hasValue := strings.Cut(arg, "=")
		lists := map[string]*[]string{
			"-f": &o.valueFiles, "--values": &o.valueFiles, "--set": &o.sets, "--set-string": &o.setStrings,
			"-a": &o.apiVersions, "--api-versions": &o.apiVersions, "-s": &o.showOnly, "--show-only": &o.showOnly,
		}
		scalars := map[string]*string{"-n": &o.namespace, "--namespace": &o.namespace, "--kube-version": &o.kubeVersion}
		list, isList := lists[name]
		scalar, isScalar := scalars[name]
		if !isList && !isScalar {
			if strings.HasPrefix(arg, "-") {
				return nil, fmt.Errorf("unknown flag: %s", arg)
			}
			positional = append(positional, arg)
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return nil, fmt.Errorf("flag needs an argument: %s", name)
			}
			i++
			value = args[i]
		}
		if isList {
			*list = append(*list, value)
		} else {
			*scalar = value
		}
	}
	if len(positional) != 3 || (positional[0] != "template" && positional[0] != "values") {
		return nil, errors.New("usage: chart-render template|values NAME CHART [flags]")
	}
	o.command, o.release, o.chartDir = positional[0], positional[1], positional[2]
	return o, nil
}

// chartMetadata maps Chart.yaml's keys to helm's .Chart field names (apiVersion -> APIVersion).
func chartMetadata(dir string) (map[string]interface{}, error) {
	raw, err := readValuesFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return nil, err
	}
	if deps, ok := raw["dependencies"].([]interface{}); ok && len(deps) > 0 {
		return nil, errors.New("chart dependencies (subcharts) are not supported by chart-render; use helm")
	}
	meta := map[string]interface{}{}
	for k, v := range raw {
		switch k {
		case "apiVersion":
			meta["APIVersion"] = v
		default:
			meta[strings.ToUpper(k[:1])+k[1:]] = v
		}
	}
	if meta["Name"] == nil || meta["Version"] == nil {
		return nil, errors.New("Chart.yaml needs name and version")
	}
	return meta, nil
}

func checkKubeVersion(meta map[string]interface{}, kube string) error {
	constraint, _ := meta["KubeVersion"].(string)
	if constraint == "" {
		return nil
	}
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return fmt.Errorf("Chart.yaml kubeVersion %q: %v", constraint, err)
	}
	v, err := semver.NewVersion(kube)
	if err != nil {
		return fmt.Errorf("--kube-version %q: %v", kube, err)
	}
	if !c.Check(v) {
		return fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", constraint, kube)
	}
	return nil
}

func mergedValues(o *options) (map[string]interface{}, error) {
	defaults, err := readValuesFile(filepath.Join(o.chartDir, "values.yaml"))
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	user := map[string]interface{}{}
	for _, f := range o.valueFiles {
		m, err := readValuesFile(f)
		if err != nil {
			return nil, err
		}
		user = overlay(user, m, false)
	}
	for _, s := range o.sets {
		if err := applySet(user, s, false); err != nil {
			return nil, err
		}
	}
	for _, s := range o.setStrings {
		if err := applySet(user, s, true); err != nil {
			return nil, err
		}
	}
	return overlay(defaults, user, true), nil
}

// chartFiles loads templates/ (by chart-relative name) and the other files (.Files).
func chartFiles(dir string) (map[string]string, files, error) {
	tpls, other := map[string]string{}, files{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		switch {
		case strings.HasPrefix(rel, "charts/"):
			return errors.New("subcharts (charts/) are not supported by chart-render; use helm")
		case strings.HasPrefix(rel, "templates/"):
			tpls[rel] = string(data)
		case rel != "Chart.yaml" && rel != "values.yaml" && rel != "values.schema.json" && rel != ".helmignore":
			other[rel] = data
		}
		return nil
	})
	return tpls, other, err
}

var errLocation = regexp.MustCompile(errStart + `((?s).*)` + errEnd)

// helmError rewrites text/template's error the way helm prints required/fail messages.
func helmError(err error) error {
	msg := err.Error()
	tokens := strings.SplitN(msg, ": ", 3)
	if m := errLocation.FindStringSubmatch(msg); m != nil && len(tokens) == 3 {
		return fmt.Errorf("execution error at (%s): %s", tokens[1], m[1])
	}
	return err
}

// installOrder is helm's InstallOrder: the order `helm template` prints kinds in.
var installOrder = strings.Fields(`PriorityClass Namespace NetworkPolicy ResourceQuota LimitRange
PodSecurityPolicy PodDisruptionBudget ServiceAccount Secret SecretList ConfigMap StorageClass
PersistentVolume PersistentVolumeClaim CustomResourceDefinition ClusterRole ClusterRoleList
ClusterRoleBinding ClusterRoleBindingList Role RoleList RoleBinding RoleBindingList Service DaemonSet
Pod ReplicationController ReplicaSet Deployment HorizontalPodAutoscaler StatefulSet Job CronJob
IngressClass Ingress APIService MutatingWebhookConfiguration ValidatingWebhookConfiguration`)

type manifest struct {
	source, content, kind string
}

func kindRank(kind string) int {
	for i, k := range installOrder {
		if k == kind {
			return i
		}
	}
	return len(installOrder)
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)
var kindLine = regexp.MustCompile(`(?m)^kind:\s*["']?([A-Za-z0-9]+)`)

func render(o *options) (string, error) {
	meta, err := chartMetadata(o.chartDir)
	if err != nil {
		return "", err
	}
	if err := checkKubeVersion(meta, o.kubeVersion); err != nil {
		return "", err
	}
	values, err := mergedValues(o)
	if err != nil {
		return "", err
	}
	tpls, other, err := chartFiles(o.chartDir)
	if err != nil {
		return "", err
	}
	kv, err := semver.NewVersion(o.kubeVersion)
	if err != nil {
		return "", fmt.Errorf("--kube-version %q: %v", o.kubeVersion, err)
	}
	chartName := meta["Name"].(string)
	top := map[string]interface{}{
		"Values":  values,
		"Chart":   meta,
		"Release": map[string]interface{}{"Name": o.release, "Namespace": o.namespace, "Service": "Helm", "IsInstall": true, "IsUpgrade": false, "Revision": 1},
		"Capabilities": capabilities{
			KubeVersion: kubeVersion{Version: "v" + kv.String(), Major: fmt.Sprint(kv.Major()), Minor: fmt.Sprint(kv.Minor())},
			APIVersions: defaultAPIVersions(o.apiVersions),
			HelmVersion: map[string]string{"Version": "chart-render"},
		},
		"Files":     other,
		"Subcharts": map[string]interface{}{},
	}
	t := template.New("gotpl").Option("missingkey=zero")
	t.Funcs(funcMap(t, map[string]int{}))
	names := make([]string, 0, len(tpls))
	for name := range tpls {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, err := t.New(chartName + "/" + name).Parse(tpls[name]); err != nil {
			return "", fmt.Errorf("parse error in %s/%s: %v", chartName, name, err)
		}
	}
	var out []manifest
	for _, name := range names {
		// NOTES.txt renders (its errors fail, as in helm) but is no manifest.
		notes := name == "templates/NOTES.txt"
		if strings.HasPrefix(path.Base(name), "_") || (!notes && len(o.showOnly) > 0 && !contains(o.showOnly, name)) {
			continue
		}
		full := chartName + "/" + name
		top["Template"] = map[string]interface{}{"Name": full, "BasePath": chartName + "/templates"}
		var b strings.Builder
		if err := t.ExecuteTemplate(&b, full, top); err != nil {
			return "", helmError(err)
		}
		if notes {
			continue
		}
		for _, doc := range docSeparator.Split(strings.ReplaceAll(b.String(), "<no value>", ""), -1) {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			kind := ""
			if m := kindLine.FindStringSubmatch(doc); m != nil {
				kind = m[1]
			}
			out = append(out, manifest{source: full, content: strings.Trim(doc, "\n"), kind: kind})
		}
	}
	// Kinds helm does not know go last, alphabetically; the same kind keeps its order.
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := kindRank(out[i].kind), kindRank(out[j].kind)
		if ri == len(installOrder) && rj == ri {
			return out[i].kind < out[j].kind
		}
		return ri < rj
	})
	var b strings.Builder
	for _, m := range out {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.source, m.content)
	}
	return b.String(), nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func main() {
	o, err := parseArgs(os.Args[1:])
	if err == nil {
		var text string
		if o.command == "values" {
			var values map[string]interface{}
			if values, err = mergedValues(o); err == nil {
				var b []byte
				b, err = json.MarshalIndent(values, "", "  ")
				text = string(b) + "\n"
			}
		} else {
			text, err = render(o)
		}
		if err == nil {
			fmt.Print(text)
			return
		}
	}
	fmt.Fprintln(os.Stderr, "Error:", err)
	os.Exit(1)
}
