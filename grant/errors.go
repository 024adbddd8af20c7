package grant

import (
	"fmt"
	"strings"
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

// Error renders the problem as "file:line: key: message".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
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
