package tool

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// A lineMatcher finds the lines of a buffer that a regexp matches, the way
// grep does, without splitting the buffer into lines first: it searches the
// whole buffer (for a literal every match must contain, with bytes.Index, when
// there is one) and confirms a candidate on its own line only where needed.
type lineMatcher struct {
	re      *regexp.Regexp // compiled with (?m), so ^ and $ match at line ends
	lit     []byte         // a literal every match contains; nil if none is known
	fold    bool           // lit is ASCII lower case and matches case-insensitively
	perLine bool           // \A or \z: whole-buffer and per-line meaning differ
}

// newLineMatcher compiles pattern (RE2 syntax) for line matching.
func newLineMatcher(pattern string, ignoreCase bool) (*lineMatcher, error) {
	flags := "(?m)"
	if ignoreCase {
		flags = "(?mi)"
	}
	re, err := regexp.Compile(flags + pattern)
	if err != nil {
		return nil, err
	}
	m := &lineMatcher{re: re}
	if tree, err := syntax.Parse(flags+pattern, syntax.Perl); err == nil {
		tree = tree.Simplify()
		if lit, fold := requiredLiteral(tree); len(lit) > 0 {
			m.lit, m.fold = []byte(lit), fold
		}
		m.perLine = usesTextAnchors(tree)
	}
	return m, nil
}

// requiredLiteral returns the longest literal that every match of re
// contains, or "". fold reports a case-insensitive literal, returned in ASCII
// lower case; one is used only when ASCII case folding is exact for it (no
// non-ASCII rune, and no k or s, which fold to the Kelvin sign and long s).
func requiredLiteral(re *syntax.Regexp) (lit string, fold bool) {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase == 0 {
			return string(re.Rune), false
		}
		for _, r := range re.Rune {
			if r >= utf8.RuneSelf || strings.ContainsRune("kKsS", r) {
				return "", false
			}
		}
		return strings.ToLower(string(re.Rune)), true
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if l, f := requiredLiteral(s); len(l) > len(lit) {
				lit, fold = l, f
			}
		}
	}
	return lit, fold
}

// lowerASCII writes b with ASCII letters in lower case into *scratch (same
// length and offsets as b) and returns it.
func lowerASCII(b []byte, scratch *[]byte) []byte {
	if cap(*scratch) < len(b) {
		*scratch = make([]byte, len(b))
	}
	out := (*scratch)[:len(b)]
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

// usesTextAnchors reports whether re uses \A or \z anywhere.
func usesTextAnchors(re *syntax.Regexp) bool {
	if re.Op == syntax.OpBeginText || re.Op == syntax.OpEndText {
		return true
	}
	for _, s := range re.Sub {
		if usesTextAnchors(s) {
			return true
		}
	}
	return false
}

// lineEnd returns the index of the '\n' ending the line holding i, or len(b).
func lineEnd(b []byte, i int) int {
	if j := bytes.IndexByte(b[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(b)
}

// each calls fn(start, end) for every matching line b[start:end] (without its
// newline), in order, until fn returns false. scratch is reused between calls
// for a case-folded copy of b, when one is needed.
func (m *lineMatcher) each(b []byte, scratch *[]byte, fn func(start, end int) bool) {
	switch {
	case m.perLine:
		for pos := 0; pos < len(b); {
			le := lineEnd(b, pos)
			if m.re.Match(b[pos:le]) && !fn(pos, le) {
				return
			}
			pos = le + 1
		}
	case m.lit != nil:
		search := b
		if m.fold {
			search = lowerASCII(b, scratch)
		}
		for pos := 0; pos < len(b); {
			i := bytes.Index(search[pos:], m.lit)
			if i < 0 {
				return
			}
			i += pos
			ls := pos + bytes.LastIndexByte(b[pos:i], '\n') + 1
			le := lineEnd(b, i)
			if m.re.Match(b[ls:le]) && !fn(ls, le) {
				return
			}
			pos = le + 1
		}
	default:
		for pos := 0; pos < len(b); {
			loc := m.re.FindIndex(b[pos:])
			if loc == nil {
				return
			}
			s, e := pos+loc[0], pos+loc[1]
			if s == len(b) && b[len(b)-1] == '\n' {
				return // the empty "line" after the final newline
			}
			ls := pos + bytes.LastIndexByte(b[pos:s], '\n') + 1
			le := lineEnd(b, s)
			if e > le && !m.re.Match(b[ls:le]) {
				pos = le + 1 // the match ran into the next line; this line alone does not match
				continue
			}
			if !fn(ls, le) {
				return
			}
			pos = le + 1
		}
	}
}
