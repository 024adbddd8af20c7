package tool

import (
	"fmt"
	"path"
	"strings"
)

// maxAlternatives bounds brace expansion, so "{a,b}{a,b}..." cannot explode.
const maxAlternatives = 1024

// maxExpandedBytes bounds the total length of a glob's expanded alternatives.
// A glob is not compiled to a regexp, but its work per directory entry grows
// with the expansion as a regexp's does with its program: every alternative
// is matched against every name, so 1,024 alternatives of a 300-byte
// "*a*a*..." segment took 3.6 s over 2,000 names where one took 28 ms.
const maxExpandedBytes = 4 * maxPatternBytes

// A globPattern matches slash-separated relative paths. "**" as a whole
// segment matches any number of directories (zero included); other segments
// use path.Match syntax ("*", "?", "[...]", "\\" escapes); "{a,b}" expands
// to alternatives before matching.
type globPattern struct {
	alts [][]string // the expanded alternatives, each split into segments
	// first numbers the states: alternative a's segment s is state
	// first[a]+s, up to states in all (each alternative's end included),
	// so a set of states is checked for one in constant time.
	first  []int
	states int
}

// A globState is a position in one alternative: segment seg of alts[alt] is next.
type globState struct{ alt, seg int }

// compileGlob parses pattern for the argument field.
func compileGlob(field, pattern string) (*globPattern, error) {
	if pattern == "" {
		return nil, fmt.Errorf("field %q: must not be empty", field)
	}
	if strings.IndexByte(pattern, 0) >= 0 {
		return nil, fmt.Errorf("field %q: must not contain a NUL byte, got %q", field, pattern)
	}
	if len(pattern) > maxPatternBytes {
		return nil, fmt.Errorf("field %q: %d bytes is longer than the %d allowed", field, len(pattern), maxPatternBytes)
	}
	exp, err := expandBraces(pattern)
	if err != nil {
		return nil, fmt.Errorf("field %q: %w in %q", field, err, pattern)
	}
	total := 0
	for _, e := range exp {
		total += len(e)
	}
	if total > maxExpandedBytes {
		return nil, fmt.Errorf("field %q: %q expands to %d alternatives totalling %d bytes, more than the %d allowed; use fewer or shorter {a,b} groups", field, pattern, len(exp), total, maxExpandedBytes)
	}
	g := &globPattern{}
	for _, e := range exp {
		var segs []string
		for s := range strings.SplitSeq(e, "/") {
			if s == "" {
				continue
			}
			if s == "." || s == ".." {
				return nil, fmt.Errorf("field %q: %q may not use %q after a wildcard", field, pattern, s)
			}
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("field %q: bad pattern segment %q in %q", field, s, pattern)
			}
			if s == "**" && len(segs) > 0 && segs[len(segs)-1] == "**" {
				continue // "**/**" matches what "**" does, with more states
			}
			segs = append(segs, s)
		}
		if len(segs) == 0 {
			return nil, fmt.Errorf("field %q: %q matches nothing", field, pattern)
		}
		g.alts = append(g.alts, segs)
		g.first = append(g.first, g.states)
		g.states += len(segs) + 1
	}
	return g, nil
}

// expandBraces expands "{a,b}" groups, nested ones included. A brace with no
// comma is kept literally; an unbalanced brace is an error.
func expandBraces(p string) ([]string, error) {
	open := -1
	depth := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			if depth == 0 {
				open = i
			}
			depth++
		case '}':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("unbalanced '}'")
			}
			if depth > 0 {
				continue
			}
			parts := splitTopCommas(p[open+1 : i])
			if len(parts) < 2 {
				continue // a literal "{x}"
			}
			rest, err := expandBraces(p[i+1:])
			if err != nil {
				return nil, err
			}
			var out []string
			for _, part := range parts {
				inner, err := expandBraces(p[:open] + part)
				if err != nil {
					return nil, err
				}
				for _, a := range inner {
					for _, b := range rest {
						if len(out) >= maxAlternatives {
							return nil, fmt.Errorf("more than %d alternatives", maxAlternatives)
						}
						out = append(out, a+b)
					}
				}
			}
			return out, nil
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unbalanced '{'")
	}
	return []string{p}, nil
}

// splitTopCommas splits s at commas outside nested braces.
func splitTopCommas(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// A stateSet is a set of states in the order they were added, with a
// mark for each state of its pattern: adding is constant time however many
// states a pattern has ("**/a/**/a/..." keeps one per "**").
type stateSet struct {
	list []globState
	in   []bool // indexed by the state's number (globPattern.first)
}

func (g *globPattern) newSet() stateSet { return stateSet{in: make([]bool, g.states)} }

// start is the set of states before any segment is consumed.
func (g *globPattern) start() []globState {
	set := g.newSet()
	for a := range g.alts {
		g.add(&set, globState{a, 0})
	}
	return set.list
}

// add adds st and, where st's segment is "**", the states after it (a "**"
// may match zero directories).
func (g *globPattern) add(set *stateSet, st globState) {
	for {
		n := g.first[st.alt] + st.seg
		if set.in[n] {
			return
		}
		set.in[n] = true
		set.list = append(set.list, st)
		segs := g.alts[st.alt]
		if st.seg >= len(segs) || segs[st.seg] != "**" {
			return
		}
		st.seg++
	}
}

// step consumes one path segment name from states. It returns the next
// states and whether a whole alternative has matched.
func (g *globPattern) step(states []globState, name string) (next []globState, matched bool) {
	set := g.newSet()
	for _, st := range states {
		segs := g.alts[st.alt]
		if st.seg >= len(segs) {
			continue
		}
		seg := segs[st.seg]
		if seg == "**" {
			g.add(&set, st)
			continue
		}
		if ok, _ := path.Match(seg, name); ok {
			g.add(&set, globState{st.alt, st.seg + 1})
		}
	}
	for _, st := range set.list {
		if st.seg == len(g.alts[st.alt]) {
			matched = true
			break
		}
	}
	return set.list, matched
}

// more reports whether states can still match something deeper.
func (g *globPattern) more(states []globState) bool {
	for _, st := range states {
		if st.seg < len(g.alts[st.alt]) {
			return true
		}
	}
	return false
}

// match reports whether the slash-separated relative path rel matches.
func (g *globPattern) match(rel string) bool {
	states := g.start()
	matched := false
	for seg := range strings.SplitSeq(rel, "/") {
		if seg == "" {
			continue
		}
		states, matched = g.step(states, seg)
		if len(states) == 0 {
			return false
		}
	}
	return matched
}

// hasMagic reports whether a pattern segment holds a wildcard.
func hasMagic(seg string) bool { return strings.ContainsAny(seg, "*?[{\\") }

// splitStatic splits pattern into a leading run of wildcard-free directories
// and the rest, which always keeps at least the last segment.
func splitStatic(pattern string) (prefix, rest string) {
	segs := strings.Split(pattern, "/")
	i := 0
	for i < len(segs)-1 && !hasMagic(segs[i]) {
		i++
	}
	return strings.Join(segs[:i], "/"), strings.Join(segs[i:], "/")
}

// pathLess orders slash-separated paths component by component (a directory's
// contents sort right after it), the order a sorted depth-first walk visits.
func pathLess(a, b string) bool {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		if ca == '/' {
			return true
		}
		if cb == '/' {
			return false
		}
		return ca < cb
	}
	return len(a) < len(b)
}
