package grant

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Ask is what a packaged program (a capsule) asks to be granted: paths,
// hosts, tools and limits. Zero limit fields ask for nothing in particular
// (the granting grant's limits apply).
type Ask struct {
	ReadWrite, ReadOnly []string // paths, relative ones from the cwd given to Intersect
	Hosts               []string // network.hosts patterns
	Tools               []string // tools the program calls
	Limits              Limits   // limits it needs (time, memory, output, ...)
}

// Missing is one thing an Ask asks for that the grant does not give.
type Missing struct {
	What string // "read-write path /src", "host api.example.com", ...
	Why  string // the grant's reason
	Fix  string // the flag or grant entry that would give it
}

// String renders m as one line.
func (m Missing) String() string {
	return fmt.Sprintf("%s: %s (grant it with %s)", m.What, m.Why, m.Fix)
}

// Intersect returns the grant a program that asks for a runs under: exactly
// what a asks for, each item allowed by g, and nothing else: only the asked
// paths, each with what g grants inside it (g's nested read-only paths
// stay read-only, its denied and protected paths stay denied and
// protected), only the asked hosts, only the asked tools, the asked limits
// (g's where a sets none), and those of g's secrets whose tools and hosts
// remain; its calls run where g's do (g's [runner] and [remote] tables).
// The result never allows what g does not: a path it lets be read
// or written, g lets be read or written. When a asks for anything g does
// not give, the grant is nil and missing lists every such item with the
// flag that would give it. g is unchanged.
func (g *Grant) Intersect(cwd string, a Ask) (narrowed *Grant, missing []Missing, err error) {
	if !filepath.IsAbs(cwd) {
		return nil, nil, &Error{File: "capsule", Msg: "the working directory " + cwd + " is not absolute"}
	}
	abs := func(p string) string {
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		return filepath.Clean(p)
	}
	for _, set := range []struct {
		list  []string
		write bool
		what  string
		flag  string
	}{{a.ReadWrite, true, "read-write path", "--rw"}, {a.ReadOnly, false, "read-only path", "--ro"}} {
		for _, p := range set.list {
			if p == "" {
				missing = append(missing, Missing{What: set.what + " \"\"", Why: "an empty path", Fix: "a path in the capsule"})
				continue
			}
			if d := g.CheckPath(abs(p), set.write); !d.Allowed {
				missing = append(missing, Missing{What: fmt.Sprintf("%s %s", set.what, abs(p)), Why: d.Reason, Fix: set.flag + " " + abs(p)})
			}
		}
	}
	for _, h := range a.Hosts {
		q, err := parseHostPattern(h)
		if err != nil {
			missing = append(missing, Missing{What: fmt.Sprintf("host %q", h), Why: err.Error(), Fix: "a valid host pattern in the capsule"})
			continue
		}
		if !slices.ContainsFunc(append(slices.Clone(g.hosts), g.private...), func(p hostPattern) bool { return p.Covers(q) }) {
			missing = append(missing, Missing{What: "host " + h, Why: "the grant does not allow this host", Fix: "--allow-host " + h})
		}
	}
	for _, t := range a.Tools {
		if !g.ToolEnabled(t) {
			why := "not enabled by the grant"
			if !slices.Contains(toolNames, t) {
				why = fmt.Sprintf("not a tool (tools: %v)", toolNames)
			}
			missing = append(missing, Missing{What: "tool " + t, Why: why, Fix: fmt.Sprintf("%q in the grant's [tools] enabled list", t)})
		}
	}
	have := g.limits
	lim := a.Limits
	if lim.Time > have.Time {
		missing = append(missing, Missing{What: "time limit " + lim.Time.String(), Why: "the grant allows " + have.Time.String(), Fix: "--time " + lim.Time.String()})
	}
	if lim.Memory > have.Memory {
		missing = append(missing, Missing{What: "memory limit " + FormatSize(lim.Memory), Why: "the grant allows " + FormatSize(have.Memory), Fix: "--memory " + FormatSize(lim.Memory)})
	}
	for _, x := range []struct {
		name       string
		ask, grant int64
	}{{"processes", int64(lim.Processes), int64(have.Processes)}, {"output", lim.Output, have.Output}, {"file_size", lim.FileSize, have.FileSize}, {"tmp", lim.Tmp, have.Tmp}} {
		if x.ask > x.grant {
			missing = append(missing, Missing{What: fmt.Sprintf("%s limit %d", x.name, x.ask), Why: fmt.Sprintf("the grant allows %d", x.grant), Fix: fmt.Sprintf("[limits] %s in the grant file", x.name)})
		}
	}
	if len(missing) > 0 {
		return nil, missing, nil
	}

	// Build the narrowed grant from g's own spec, keeping g's denied
	// paths and writable_protected names that apply inside the asked paths.
	old := g.spec
	s := &spec{
		source:            "capsule",
		files:             g.Files(),
		base:              cwd,
		writableProtected: slices.Clone(old.writableProtected),
		limits:            g.limits.over(lim),
		unenforced:        old.unenforced,
		toolLimits:        map[string]Limits{},
		toolsSet:          true,
		tools:             []string{},
		// The capsule's calls run where g's do: in g's container image,
		// on g's remote hands (its paths resolved already).
		runner:    old.runner,
		remote:    g.remote,
		remoteSet: old.remoteSet,
	}
	for _, t := range a.Tools {
		if slices.Contains(toolNames, t) {
			s.tools = append(s.tools, t)
		}
	}
	for _, w := range absWasmTools(old.wasmTools, old.base) {
		if slices.Contains(a.Tools, w.name) {
			s.wasmTools = append(s.wasmTools, w)
		}
	}
	for _, p := range a.ReadWrite {
		s.readWrite = append(s.readWrite, abs(p))
	}
	for _, p := range a.ReadOnly {
		s.readOnly = append(s.readOnly, abs(p))
	}
	nestRoots(g, s)
	for _, d := range g.deny {
		for _, p := range append(slices.Clone(s.readWrite), s.readOnly...) {
			if r, err := resolve(p); err == nil && within(d, r.path) && d != r.path {
				s.deny = append(s.deny, d)
				break
			}
		}
	}
	for _, h := range a.Hosts {
		q, _ := parseHostPattern(h)
		if slices.ContainsFunc(g.hosts, func(p hostPattern) bool { return p.Covers(q) }) {
			s.hosts = append(s.hosts, h)
		} else {
			s.private = append(s.private, h)
		}
	}
	for _, h := range old.plainHTTP {
		q, err := parseHostPattern(h)
		if err == nil && slices.ContainsFunc(a.Hosts, func(x string) bool {
			p, err := parseHostPattern(x)
			return err == nil && q.Covers(p)
		}) {
			s.plainHTTP = append(s.plainHTTP, h)
		}
	}
	for t, l := range g.toolLimits {
		if slices.Contains(a.Tools, t) {
			s.toolLimits[t] = minLimits(l, s.limits)
		}
	}
	// Secrets: each keeps the tools and hosts that remain; one with none
	// left is dropped (the narrowed grant cannot use it).
	for _, sec := range old.secrets {
		r, ok := g.secretRule(sec.name)
		if !ok {
			continue
		}
		var tools, hosts []string
		for _, t := range r.Tools {
			if slices.Contains(a.Tools, t) {
				tools = append(tools, t)
			}
		}
		for _, h := range r.Hosts {
			p, err := parseHostPattern(h)
			if err != nil {
				continue
			}
			for _, x := range a.Hosts {
				q, err := parseHostPattern(x)
				if err == nil && p.Covers(q) {
					hosts = append(hosts, x)
				}
			}
		}
		if len(tools) == 0 || len(hosts) == 0 {
			continue
		}
		sec.from = r.Source
		sec.tools, sec.hosts = tools, slices.Compact(hosts)
		s.secrets = append(s.secrets, sec)
	}
	var ps problems
	n := build(s, &ps)
	if len(ps.list) > 0 {
		return nil, nil, report("capsule", nil, &ps)
	}
	// g's protected paths inside what remains writable stay protected,
	// also those its own scan found that this one's did not.
	for _, p := range g.protected {
		if r, ok := n.rootOf(p.path); ok && r.writable && !slices.ContainsFunc(n.protected, func(q protectedPath) bool { return q.path == p.path }) {
			n.protected = append(n.protected, p)
		}
	}
	slices.SortFunc(n.protected, func(a, b protectedPath) int { return strings.Compare(a.path, b.path) })
	if err := n.narrows(g); err != nil {
		return nil, nil, &Error{File: "capsule", Msg: err.Error()}
	}
	return n, nil, nil
}

// nestRoots adds to s, a grant narrowed to what a program asks, each of
// g's granted paths that lies inside an asked one, with g's access narrowed
// by the ask's: a directory g grants read-only inside one the program asks
// read-write stays read-only (as does everything g grants inside one it
// asks read-only). Without them the narrowed grant gave the program write
// access wherever the ask's path was writable in g at its top.
func nestRoots(g *Grant, s *spec) {
	type ask struct {
		path  string
		write bool
	}
	var asks []ask
	have := map[string]bool{}
	for _, set := range []struct {
		list  []string
		write bool
	}{{s.readWrite, true}, {s.readOnly, false}} {
		for _, p := range set.list {
			if r, err := resolve(p); err == nil {
				asks = append(asks, ask{r.path, set.write})
				have[r.path] = true
			}
		}
	}
	for _, r := range g.roots {
		if have[r.path] {
			continue
		}
		best := -1
		for i, a := range asks {
			if within(r.path, a.path) && (best < 0 || len(a.path) > len(asks[best].path)) {
				best = i
			}
		}
		if best < 0 {
			continue
		}
		have[r.path] = true
		if r.writable && asks[best].write {
			s.readWrite = append(s.readWrite, r.path)
		} else {
			s.readOnly = append(s.readOnly, r.path)
		}
	}
}

// narrows checks that n allows nothing g does not, as far as the grants'
// structure tells: each of n's granted paths is granted by g with at least
// that access, each of g's read-only paths inside one n grants read-write
// is read-only in n, and g's denied paths inside n's are denied in n. It
// is the backstop behind nestRoots; an error is a bug.
func (n *Grant) narrows(g *Grant) error {
	for _, r := range n.roots {
		if d := g.CheckPath(r.path, r.writable); !d.Allowed {
			return fmt.Errorf("the narrowed grant gives %s, which the grant does not: %s", r.path, d.Reason)
		}
	}
	for _, r := range g.roots {
		if o, ok := n.rootOf(r.path); ok && o.writable && !r.writable {
			return fmt.Errorf("the narrowed grant makes %s writable, which the grant keeps read-only", r.path)
		}
	}
	for _, d := range g.deny {
		if _, ok := n.rootOf(d); ok && !slices.Contains(n.deny, d) {
			return fmt.Errorf("the narrowed grant shows %s, which the grant denies", d)
		}
	}
	return nil
}

// secretRule returns g's resolved rule for the named secret.
func (g *Grant) secretRule(name string) (SecretRule, bool) {
	for _, r := range g.secrets {
		if r.Name == name {
			return r, true
		}
	}
	return SecretRule{}, false
}

// minLimits returns the smaller of each field of a and b.
func minLimits(a, b Limits) Limits {
	return Limits{
		Time:      min(a.Time, b.Time),
		Memory:    min(a.Memory, b.Memory),
		Processes: min(a.Processes, b.Processes),
		Output:    min(a.Output, b.Output),
		FileSize:  min(a.FileSize, b.FileSize),
		Tmp:       min(a.Tmp, b.Tmp),
	}
}
