package grant

import (
	"path/filepath"
	"slices"
	"strings"
)

// With returns a new grant: g widened or adjusted by command-line values, as
// when a user passes both a grant file and flags. Lists (paths, hosts,
// private, plain_http, writable_protected) are added to; Tools, when set,
// replaces the enabled tools; each limit set in f replaces that limit for
// every tool. Where the calls run (g's [runner] and [remote] tables) stays
// as g says, and so does what g hides or protects beyond its spec (Guard,
// Remember) inside the trees that remain. Relative paths in f start from cwd, which also becomes the
// grant's BaseDir. g is unchanged; errors name the flag's key in "flags".
func (g *Grant) With(cwd string, f Flags) (*Grant, error) {
	if !filepath.IsAbs(cwd) {
		return nil, &Error{File: "flags", Msg: "the working directory " + cwd + " is not absolute"}
	}
	old := g.spec
	abs := func(list []string) []string {
		out := make([]string, len(list))
		for i, p := range list {
			if p != "" && !filepath.IsAbs(p) {
				p = filepath.Join(old.base, p)
			}
			out[i] = p
		}
		return out
	}
	s := &spec{
		source:            "flags",
		files:             g.Files(),
		base:              cwd,
		readWrite:         append(abs(old.readWrite), f.ReadWrite...),
		readOnly:          append(abs(old.readOnly), f.ReadOnly...),
		deny:              append(abs(old.deny), f.Deny...),
		writableProtected: append(slices.Clone(old.writableProtected), f.WritableProtected...),
		hosts:             append(slices.Clone(old.hosts), f.AllowHosts...),
		private:           append(slices.Clone(old.private), f.Private...),
		plainHTTP:         append(slices.Clone(old.plainHTTP), f.PlainHTTP...),
		limits:            old.limits.over(f.Limits),
		unenforced:        unenforcedFlag(f, old.unenforced),
		toolLimits:        map[string]Limits{},
		tools:             slices.Clone(old.tools),
		toolsSet:          old.toolsSet,
		searchProvider:    old.searchProvider,
		searchEndpoint:    old.searchEndpoint,
		searches:          old.searches,
		searchesSet:       old.searchesSet,
		wasmTools:         absWasmTools(old.wasmTools, old.base),
		runner:            old.runner,
		// Where the sandboxes run is the grant's, not the flags': its
		// paths were resolved against the grant's own directory already.
		remote:    g.remote,
		remoteSet: old.remoteSet,
	}
	for t, l := range old.toolLimits {
		s.toolLimits[t] = l.over(f.Limits)
	}
	if f.Tools != nil {
		s.tools, s.toolsSet = slices.Clone(f.Tools), true
	}
	for _, sec := range old.secrets {
		if file, ok := strings.CutPrefix(sec.from, "file:"); ok && file != "" && !filepath.IsAbs(file) {
			sec.from = "file:" + filepath.Join(old.base, file)
		}
		sec.tools, sec.hosts = slices.Clone(sec.tools), slices.Clone(sec.hosts)
		s.secrets = append(s.secrets, sec)
	}
	var ps problems
	w := build(s, &ps)
	if len(ps.list) > 0 {
		return nil, report("flags", nil, &ps)
	}
	w.keepRestrictions(g)
	return w, nil
}

// keepRestrictions adds to w, a grant just built from g's spec and more,
// what g restricts beyond its spec: the paths Guard hid and kept read-only,
// those Remember protected and the sockets it hid. Without them a grant
// widened by flags (or by Options.AllowUnenforcedLimits in the Go API)
// showed the sandbox an embedding program's own token file that Guard had
// hidden. A denied path a flag grants by name is the flag's to open; the
// credentials g hid, w has hidden again by its own roots.
func (w *Grant) keepRestrictions(g *Grant) {
	for _, d := range g.deny {
		if _, cred := g.credentials[d]; cred || slices.Contains(w.deny, d) {
			continue
		}
		if owner, ok := w.rootOf(d); ok && owner.path != d {
			w.deny = append(w.deny, d)
			if g.sockets[d] {
				if w.sockets == nil {
					w.sockets = map[string]bool{}
				}
				w.sockets[d] = true
			}
		}
	}
	slices.Sort(w.deny)
	w.deny = slices.Compact(w.deny)
	for _, p := range g.protected {
		if owner, ok := w.rootOf(p.path); ok && owner.writable && owner.path != p.path && !w.writableProtected[p.name] {
			w.protected = append(w.protected, p)
		}
	}
	w.protected = sortProtected(w.protected)
}
