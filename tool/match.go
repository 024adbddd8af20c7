package tool

import (
	"bytes"
	"fmt"
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
	// spansLines: the pattern can match '\n' (\s, [^a], (?s).), so a
	// whole-buffer search could find a match that runs across lines, be
	// refused on its line, and search again from the next: with a long
	// repeat that is quadratic in it. Such a pattern is matched line by line.
	spansLines bool
}

// maxRegexpInsts bounds the size of a grep pattern's compiled program. The
// regexp engine's work per byte searched grows with the program's size, not
// the pattern's length: the 25 bytes [\x{0}-\x{10FFFF}]{1000} compile to
// 1,002 instructions and ran grep on a 1.3 MB file to its time limit. Real
// searches compile to tens of instructions ((\w+\s*){50} to about 300); a
// case-sensitive literal, searched by index however long, is exempt.
const maxRegexpInsts = 1000

// errRegexpTooLarge is the refusal of a pattern past maxRegexpInsts.
type errRegexpTooLarge struct{ insts int }

func (e errRegexpTooLarge) Error() string {
	return fmt.Sprintf("it compiles to %d instructions, more than the %d allowed (a repeat such as {1000} copies what it repeats that many times); use a smaller repeat count, or + or *", e.insts, maxRegexpInsts)
}

// newLineMatcher compiles pattern (RE2 syntax) for line matching, refusing
// one whose program is larger than maxRegexpInsts (errRegexpTooLarge).
func newLineMatcher(pattern string, ignoreCase bool) (*lineMatcher, error) {
	flags := "(?m)"
	if ignoreCase {
		flags = "(?mi)"
	}
	tree, err := syntax.Parse(flags+pattern, syntax.Perl)
	if err != nil {
		return nil, err
	}
	tree = tree.Simplify()
	prog, err := syntax.Compile(tree)
	if err != nil {
		return nil, err
	}
	if _, complete := prog.Prefix(); !complete && len(prog.Inst) > maxRegexpInsts {
		return nil, errRegexpTooLarge{insts: len(prog.Inst)}
	}
	re, err := regexp.Compile(flags + pattern)
	if err != nil {
		return nil, err
	}
	m := &lineMatcher{re: re, perLine: usesTextAnchors(tree), spansLines: matchesNewline(prog)}
	if lit, fold := requiredLiteral(tree); len(lit) > 0 {
		m.lit, m.fold = []byte(lit), fold
	}
	return m, nil
}

// matchesNewline reports whether any instruction of prog can consume '\n'.
func matchesNewline(prog *syntax.Prog) bool {
	for _, in := range prog.Inst {
		switch in.Op {
		case syntax.InstRuneAny:
			return true
		case syntax.InstRune1, syntax.InstRune:
			if in.MatchRune('\n') {
				return true
			}
		}
	}
	return false
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
	case m.perLine, m.lit == nil && m.spansLines:
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
