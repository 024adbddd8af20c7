package grant

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// WasmTool is a tool a grant adds, backed by a WebAssembly (WASI) module:
// [tools.wasm.NAME]. Each call runs in a fresh instance of the module, with
// the call's JSON arguments on stdin, the tool's granted directories as
// preopens and its limits; what it writes to stdout is the result.
type WasmTool struct {
	Name        string
	Module      string // absolute path of the module file
	SHA256      string // the module's pinned hash, 64 lower-case hex digits
	Description string
	Schema      json.RawMessage // the arguments' JSON schema (an object)
	// ReadOnly and ReadWrite are the directories the module sees, resolved;
	// each lies inside the grant with at least that access.
	ReadOnly, ReadWrite []string
	Limits              Limits // the tool's limits, every field set
}

// wasmToolSpec is [tools.wasm.NAME] as written.
type wasmToolSpec struct {
	name, module, sha256, description, schema string
	readOnly, readWrite                       []string
	limits                                    Limits
}

var wasmToolName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`) })

// wasmToolsFromTOML reads the [tools.wasm] table of [tools.wasm.NAME] tables.
func wasmToolsFromTOML(s *spec, v any, key []string, ps *problems) {
	t, ok := v.(map[string]any)
	if !ok {
		ps.add(key, "must be a table of [tools.wasm.NAME] tables, not %s", tomlType(v))
		return
	}
	for _, name := range sortedKeys(t) {
		sub := append(slices.Clip(key), name)
		w := wasmToolSpec{name: name}
		str := func(dst *string) func(any, []string) { return stringField(ps, dst) }
		tt, ok := t[name].(map[string]any)
		if !ok {
			ps.add(sub, "must be a table, not %s", tomlType(t[name]))
			continue
		}
		limits := map[string]any{}
		rest := map[string]any{}
		for k, x := range tt {
			switch k {
			case "time", "memory", "output":
				limits[k] = x
			default:
				rest[k] = x
			}
		}
		walkTable(rest, sub, ps, map[string]func(any, []string){
			"module":      str(&w.module),
			"sha256":      str(&w.sha256),
			"description": str(&w.description),
			"schema":      str(&w.schema),
			"read_only":   func(v any, key []string) { w.readOnly = stringList(v, key, ps) },
			"read_write":  func(v any, key []string) { w.readWrite = stringList(v, key, ps) },
		})
		w.limits = limitsFromTOML(limits, sub, ps)
		s.wasmTools = append(s.wasmTools, w)
	}
}

// buildWasmTools validates the spec's wasm tools against the rest of g.
func (g *Grant) buildWasmTools(list []wasmToolSpec, ps *problems) {
	for _, w := range list {
		key := func(k string) []string { return []string{"tools", "wasm", w.name, k} }
		n := ps.n
		switch {
		case !wasmToolName().MatchString(w.name):
			ps.add([]string{"tools", "wasm", w.name}, "a wasm tool's name is a-z, 0-9 and _, starting with a letter, at most 64")
		case slices.Contains(toolNames, w.name):
			ps.add([]string{"tools", "wasm", w.name}, "%q is a built-in tool", w.name)
		}
		if w.module == "" {
			ps.add(key("module"), "is required: the module file")
		}
		sum := strings.ToLower(w.sha256)
		if len(sum) != 64 || strings.Trim(sum, "0123456789abcdef") != "" {
			ps.add(key("sha256"), "must be the module's SHA-256, 64 hex digits")
		}
		if strings.TrimSpace(w.description) == "" {
			ps.add(key("description"), "is required: what the tool does and its limits, for the model")
		}
		schema := json.RawMessage(`{"type":"object"}`)
		if w.schema != "" {
			var obj map[string]any
			if err := json.Unmarshal([]byte(w.schema), &obj); err != nil {
				ps.add(key("schema"), "must be a JSON object (a JSON schema): %v", err)
			} else if typ, _ := obj["type"].(string); typ != "object" {
				ps.add(key("schema"), `must be a schema of "type": "object"`)
			} else {
				schema = json.RawMessage(w.schema)
			}
		}
		wt := WasmTool{Name: w.name, SHA256: sum, Description: w.description, Schema: schema, Limits: g.limits.over(w.limits)}
		wt.Module = w.module
		if wt.Module != "" && !filepath.IsAbs(wt.Module) {
			wt.Module = filepath.Join(g.base, wt.Module)
		}
		wt.Module = filepath.Clean(wt.Module)
		for _, set := range []struct {
			list  []string
			write bool
			dst   *[]string
			k     string
		}{{w.readOnly, false, &wt.ReadOnly, "read_only"}, {w.readWrite, true, &wt.ReadWrite, "read_write"}} {
			for _, p := range set.list {
				abs := p
				if !filepath.IsAbs(abs) {
					abs = filepath.Join(g.base, abs)
				}
				d := g.CheckPath(filepath.Clean(abs), set.write)
				if !d.Allowed {
					ps.addValue(key(set.k), p, "%s", d.Reason)
					continue
				}
				*set.dst = append(*set.dst, d.Paths[0])
			}
		}
		if ps.n == n {
			g.wasmTools = append(g.wasmTools, wt)
		}
	}
}

// WasmTools returns the grant's wasm tools, sorted by name.
func (g *Grant) WasmTools() []WasmTool {
	out := make([]WasmTool, len(g.wasmTools))
	for i, w := range g.wasmTools {
		w.ReadOnly, w.ReadWrite = slices.Clone(w.ReadOnly), slices.Clone(w.ReadWrite)
		w.Schema = slices.Clone(w.Schema)
		out[i] = w
	}
	return out
}

// WasmTool returns the grant's wasm tool of that name.
func (g *Grant) WasmTool(name string) (WasmTool, bool) {
	for _, w := range g.WasmTools() {
		if w.Name == name {
			return w, true
		}
	}
	return WasmTool{}, false
}

func (g *Grant) hasWasmTool(name string) bool {
	return slices.ContainsFunc(g.wasmTools, func(w WasmTool) bool { return w.Name == name })
}

// wasmToolsString renders the wasm tools for String.
func (g *Grant) wasmToolsString() string {
	var b strings.Builder
	for _, w := range g.wasmTools {
		fmt.Fprintf(&b, "wasm_tool %s module %s sha256 %s ro %v rw %v limits %s\n", w.Name, w.Module, w.SHA256, w.ReadOnly, w.ReadWrite, w.Limits)
	}
	return b.String()
}

// absWasmTools returns list with its relative paths made absolute against
// base, for a grant built on another base (With, Intersect).
func absWasmTools(list []wasmToolSpec, base string) []wasmToolSpec {
	abs := func(p string) string {
		if p != "" && !filepath.IsAbs(p) {
			return filepath.Join(base, p)
		}
		return p
	}
	out := make([]wasmToolSpec, len(list))
	for i, w := range list {
		w.module = abs(w.module)
		w.readOnly, w.readWrite = slices.Clone(w.readOnly), slices.Clone(w.readWrite)
		for j := range w.readOnly {
			w.readOnly[j] = abs(w.readOnly[j])
		}
		for j := range w.readWrite {
			w.readWrite[j] = abs(w.readWrite[j])
		}
		out[i] = w
	}
	return out
}
