package grant

import (
	"slices"
	"strings"
)

// toolNames are the names of the tools a grant can enable, in a fixed order.
var toolNames = []string{"read_file", "write_file", "edit_file", "glob", "grep", "shell", "background_command", "http_fetch", "web_search"}

// ToolNames returns the names of the tools a grant can enable, in a fixed order.
func ToolNames() []string { return slices.Clone(toolNames) }

// defaultTools are enabled when a grant does not say: every tool, with
// http_fetch only when the grant names hosts or private addresses (without
// them it cannot succeed), and web_search only when it names a provider.
func defaultTools(hasHosts, hasSearch bool) []string {
	return slices.DeleteFunc(slices.Clone(toolNames), func(t string) bool {
		return t == "http_fetch" && !hasHosts || t == "web_search" && !(hasHosts && hasSearch)
	})
}

// toolsFromTOML reads [tools]: the enabled list and one table of limit
// overrides per tool.
func toolsFromTOML(s *spec, v any, key []string, ps *problems) {
	t, ok := v.(map[string]any)
	if !ok {
		ps.add(key, "must be a table, not %s", tomlType(v))
		return
	}
	for _, k := range sortedKeys(t) {
		sub := append(key[:len(key):len(key)], k)
		switch {
		case k == "enabled":
			s.tools = stringList(t[k], sub, ps)
			s.toolsSet = true
		case slices.Contains(toolNames, k):
			if k == "web_search" {
				t[k] = searchFromTOML(s, t[k], ps)
			}
			if tt, ok := t[k].(map[string]any); ok {
				if _, ok := tt["unenforced"]; ok {
					ps.add(append(slices.Clip(sub), "unenforced"), "applies to the whole grant: set it under [limits]")
					rest := make(map[string]any, len(tt))
					for kk, x := range tt {
						if kk != "unenforced" {
							rest[kk] = x
						}
					}
					t[k] = rest
				}
			}
			if s.toolLimits == nil {
				s.toolLimits = map[string]Limits{}
			}
			s.toolLimits[k] = limitsFromTOML(t[k], sub, ps)
		case k == "wasm":
			wasmToolsFromTOML(s, t[k], sub, ps)
		default:
			unknownKey(sub, k, append([]string{"enabled", "wasm"}, toolNames...), ps)
		}
	}
}

// checkTools validates the enabled list and returns it as a set.
func checkTools(s *spec, ps *problems) map[string]bool {
	names := s.tools
	if !s.toolsSet {
		names = defaultTools(len(s.hosts) > 0 || len(s.private) > 0, s.searchProvider != "")
	}
	set := map[string]bool{}
	for _, n := range names {
		switch {
		case !slices.Contains(toolNames, n) && !slices.ContainsFunc(s.wasmTools, func(w wasmToolSpec) bool { return w.name == n }):
			ps.addValue([]string{"tools", "enabled"}, n, "%q is not a tool (tools: %s)", n, strings.Join(toolNames, ", "))
		case set[n]:
			ps.addValue([]string{"tools", "enabled"}, n, "%q is listed twice", n)
		case n == "web_search" && s.searchProvider == "":
			ps.addValue([]string{"tools", "enabled"}, n, "web_search needs a provider: set tools.web_search.provider (\"brave\" or \"tavily\") and grant its host")
		}
		set[n] = true
	}
	return set
}
