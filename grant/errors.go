package grant

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// An Error is one problem in a grant: the file (or "flags"), the line when
// known, the key and what is wrong with its value. Parse and FromFlags return
// every problem they find, joined with errors.Join; errors.As finds the first.
type Error struct {
	File string // grant file name as given to Parse, or "flags"
	Line int    // 1-based line of the key; 0 when unknown
	Key  string // dotted key, e.g. "limits.memory"; empty for syntax errors
	Msg  string // what is wrong, e.g. `"12XB" is not a size`
}

// Error renders the problem as "file:line: key: message", on one line: a
// line break, control or other unprintable character in any part (a TOML
// library message quotes the input it stopped at) is escaped as in a Go
// string literal ("\n", "\x00", "\u2028"), so a grant file cannot make an
// error line that does not start with the file's name.
func (e *Error) Error() string {
	var b strings.Builder
	writeEscaped(&b, e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Key != "" {
		writeEscaped(&b, e.Key)
		b.WriteString(": ")
	}
	writeEscaped(&b, e.Msg)
	return b.String()
}

// writeEscaped writes s with every unprintable rune and invalid byte
// escaped, and the rest as it is.
func writeEscaped(b *strings.Builder, s string) {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(b, `\x%02x`, s[i])
		case r != ' ' && !strconv.IsPrint(r):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
}

// problem is an Error before its file and line are known.
type problem struct {
	key   []string // path of TOML keys, e.g. {"limits", "memory"}
	value string   // the list entry at fault, to find its line; "" for the key itself
	msg   string
}

// problems collects validation failures in the order they are found. It
// keeps the first maxErrors and only counts the rest, so a file with
// thousands of bad keys costs no more to report than one with twenty.
type problems struct {
	list []problem // the first maxErrors problems
	n    int       // every problem found, kept or not
}

func (p *problems) add(key []string, format string, args ...any) {
	p.addValue(key, "", format, args...)
}

// addValue records a problem with one entry of the list at key.
func (p *problems) addValue(key []string, value, format string, args ...any) {
	p.n++
	if len(p.list) >= maxErrors {
		return
	}
	k := make([]string, len(key))
	copy(k, key)
	p.list = append(p.list, problem{key: k, value: value, msg: fmt.Sprintf(format, args...)})
}

// key joins path elements, quoting those that are not bare TOML keys.
func joinKey(key []string) string {
	parts := make([]string, len(key))
	for i, k := range key {
		if isBareKey(k) {
			parts[i] = k
		} else {
			parts[i] = fmt.Sprintf("%q", k)
		}
	}
	return strings.Join(parts, ".")
}

func isBareKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
		default:
			return false
		}
	}
	return true
}
