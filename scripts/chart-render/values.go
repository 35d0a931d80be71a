package main

// Values as helm builds them: chart defaults, then -f files in order, then --set in order;
// numbers from YAML become float64 (helm reads YAML through JSON), --set integers int64, and a
// null in user values removes the chart's default.

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// parseYAMLMap reads a YAML document into JSON-shaped values (maps with string keys, float64 numbers).
func parseYAMLMap(data []byte, what string) (map[string]interface{}, error) {
	var raw interface{}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: %v", what, err)
	}
	if raw == nil {
		return map[string]interface{}{}, nil
	}
	v, err := jsonShaped(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", what, err)
	}
	m, ok := v.(map[string]interface{})
	if !ok {
		return nil, fmt.Errorf("%s: the top level is not a map", what)
	}
	return m, nil
}

// jsonShaped round-trips a decoded YAML value through JSON, as sigs.k8s.io/yaml does for helm.
func jsonShaped(v interface{}) (interface{}, error) {
	b, err := json.Marshal(stringKeys(v))
	if err != nil {
		return nil, err
	}
	var out interface{}
	err = json.Unmarshal(b, &out)
	return out, err
}

func stringKeys(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		out := make(map[string]interface{}, len(t))
		for k, x := range t {
			out[k] = stringKeys(x)
		}
		return out
	case map[interface{}]interface{}:
		out := make(map[string]interface{}, len(t))
		for k, x := range t {
			out[fmt.Sprint(k)] = stringKeys(x)
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(t))
		for i, x := range t {
			out[i] = stringKeys(x)
		}
		return out
	}
	return v
}

// overlay lays over on base, maps merged key by key. helm merges user files so (mergeMaps) and
// then the result over the chart's defaults (coalesce), where a user null removes the default.
func overlay(base, over map[string]interface{}, nullRemoves bool) map[string]interface{} {
	out := make(map[string]interface{}, len(base))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		if v == nil && nullRemoves {
			delete(out, k)
			continue
		}
		if om, ok := v.(map[string]interface{}); ok {
			if bm, ok := out[k].(map[string]interface{}); ok {
				out[k] = overlay(bm, om, nullRemoves)
				continue
			}
		}
		out[k] = v
	}
	return out
}

func readValuesFile(path string) (map[string]interface{}, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseYAMLMap(data, path)
}

// applySet applies one --set / --set-string argument: comma-separated key=value pairs, dotted
// keys, name[index] list entries and {a,b} lists.
func applySet(into map[string]interface{}, arg string, asString bool) error {
	for _, pair := range splitUnescaped(arg, ',', true) {
		eq := indexUnescaped(pair, '=')
		if eq < 0 {
			return fmt.Errorf("key %q has no value", pair)
		}
		key, raw := pair[:eq], pair[eq+1:]
		var value interface{}
		if !asString && strings.HasPrefix(raw, "{") && strings.HasSuffix(raw, "}") {
			list := []interface{}{}
			if inner := raw[1 : len(raw)-1]; inner != "" {
				for _, item := range splitUnescaped(inner, ',', false) {
					list = append(list, typedValue(unescape(item), false))
				}
			}
			value = list
		} else {
			value = typedValue(unescape(raw), asString)
		}
		if err := setPath(into, splitUnescaped(key, '.', false), value); err != nil {
			return fmt.Errorf("--set %s: %v", pair, err)
		}
	}
	return nil
}

// typedValue is helm's strvals typing: true/false, null, integers without a leading zero.
func typedValue(s string, asString bool) interface{} {
	if asString {
		return s
	}
	switch strings.ToLower(s) {
	case "true":
		return true
	case "false":
		return false
	case "null":
		return nil
	case "0":
		return int64(0)
	}
	if s != "" && s[0] != '0' {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n
		}
	}
	return s
}

func setPath(m map[string]interface{}, path []string, value interface{}) error {
	name, index, hasIndex, err := splitIndex(unescape(path[0]))
	if err != nil {
		return err
	}
	last := len(path) == 1
	if !hasIndex {
		if last {
			m[name] = value
			return nil
		}
		child, ok := m[name].(map[string]interface{})
		if !ok {
			child = map[string]interface{}{}
			m[name] = child
		}
		return setPath(child, path[1:], value)
	}
	list, _ := m[name].([]interface{})
	for len(list) <= index {
		list = append(list, nil)
	}
	if last {
		list[index] = value
	} else {
		child, ok := list[index].(map[string]interface{})
		if !ok {
			child = map[string]interface{}{}
			list[index] = child
		}
		if err := setPath(child, path[1:], value); err != nil {
			return err
		}
	}
	m[name] = list
	return nil
}

func splitIndex(key string) (string, int, bool, error) {
	open := strings.IndexByte(key, '[')
	if open < 0 || !strings.HasSuffix(key, "]") {
		return key, 0, false, nil
	}
	n, err := strconv.Atoi(key[open+1 : len(key)-1])
	if err != nil || n < 0 {
		return "", 0, false, fmt.Errorf("bad list index in %q", key)
	}
	return key[:open], n, true, nil
}

// splitUnescaped splits on sep outside backslash escapes (and, when braces, outside {...}).
func splitUnescaped(s string, sep byte, braces bool) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\':
			i++
		case braces && s[i] == '{':
			depth++
		case braces && s[i] == '}':
			depth--
		case s[i] == sep && depth == 0:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

func indexUnescaped(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
		} else if s[i] == c {
			return i
		}
	}
	return -1
}

func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
