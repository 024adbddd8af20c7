package grant

import (
	"errors"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// The TOML library records the line of every key but exposes it only in the
// ParseError of a value that fails to decode. A lines index uses that on the
// one parse Parse makes: the document is decoded into toml.Primitive values,
// and the line of a key is read from the error of decoding its primitive into
// a probe that always fails. Nothing is parsed again, however many problems
// there are.

// errProbe is returned by the probe; seeing it proves the line belongs to the key.
var errProbe = errors.New("line probe")

type probe struct{}

func (probe) UnmarshalTOML(any) error { return errProbe }

// A lines index finds where keys are defined in a decoded document.
type lines struct {
	md   toml.MetaData
	top  map[string]toml.Primitive
	text []string                             // the document's lines, for list entries
	sub  map[string]map[string]toml.Primitive // decoded tables, by joined key
}

// lineOf returns the 1-based line where key is defined, or 0.
func (l *lines) lineOf(key []string) int {
	if l == nil || len(key) == 0 {
		return 0
	}
	prims := l.top
	for i, k := range key {
		p, ok := prims[k]
		if !ok {
			return 0
		}
		if i == len(key)-1 {
			var pe toml.ParseError
			if err := l.md.PrimitiveDecode(p, probe{}); errors.As(err, &pe) && pe.Message == errProbe.Error() {
				return pe.Position.Line
			}
			return 0
		}
		path := joinKey(key[:i+1])
		sub, ok := l.sub[path]
		if !ok {
			if err := l.md.PrimitiveDecode(p, &sub); err != nil {
				sub = nil
			}
			if l.sub == nil {
				l.sub = map[string]map[string]toml.Primitive{}
			}
			l.sub[path] = sub
		}
		if sub == nil {
			return 0
		}
		prims = sub
	}
	return 0
}

// problemLine finds the line of a problem: the line of the list entry at
// fault when it can be found below its key, else the line of the key, else
// that of the nearest enclosing table (for a required key that is missing).
func (l *lines) problemLine(p problem) int {
	for k := p.key; len(k) > 0; k = k[:len(k)-1] {
		line := l.lineOf(k)
		if line == 0 {
			continue
		}
		if p.value != "" && len(k) == len(p.key) {
			if e := l.entryLine(line, p.value); e > 0 {
				return e
			}
		}
		return line
	}
	return 0
}

// entryLine returns the first line from line onwards, before the next table
// header, that holds value as a basic or literal TOML string; 0 if none.
func (l *lines) entryLine(line int, value string) int {
	basic := strconv.Quote(value)
	literal := "'" + value + "'"
	for i := line - 1; i < len(l.text); i++ {
		s := l.text[i]
		if i > line-1 && strings.HasPrefix(strings.TrimSpace(s), "[") && !strings.HasPrefix(strings.TrimSpace(s), "[\"") {
			break
		}
		if strings.Contains(s, basic) || strings.Contains(s, literal) {
			return i + 1
		}
	}
	return 0
}
