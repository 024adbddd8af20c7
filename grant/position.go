package grant

import (
	"errors"
	"reflect"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// The TOML library records the line of every key but exposes it only in the
// ParseError of a value that fails to decode. lineOf uses that: it decodes the
// document again into a struct built for the one key path, whose leaf always
// fails, and reads the line from the error. It runs only when reporting a
// problem, so the extra parse costs nothing on a valid grant.

// errProbe is returned by the probe leaf; seeing it proves the line belongs to the key.
var errProbe = errors.New("line probe")

type probe struct{}

func (probe) UnmarshalTOML(any) error { return errProbe }

var probeType = reflect.TypeFor[probe]()

// lineOf returns the 1-based line where key is defined in doc, or 0.
func lineOf(doc string, key []string) int {
	if len(key) == 0 {
		return 0
	}
	t := probeType
	for i := len(key) - 1; i >= 0; i-- {
		name := key[i]
		// The library reads the name from a struct tag and cuts it at a comma.
		if name == "" || strings.ContainsAny(name, ",\x00") {
			return 0
		}
		t = reflect.StructOf([]reflect.StructField{{
			Name: "F",
			Type: t,
			Tag:  reflect.StructTag(`toml:` + strconv.Quote(name)),
		}})
	}
	v := reflect.New(t)
	_, err := toml.Decode(doc, v.Interface())
	var pe toml.ParseError
	if errors.As(err, &pe) && pe.Message == errProbe.Error() {
		return pe.Position.Line
	}
	return 0
}

// problemLine finds the line of a problem: the line of the list entry at
// fault when it can be found below its key, else the line of the key, else
// that of the nearest enclosing table (for a required key that is missing).
func problemLine(doc string, p problem) int {
	for k := p.key; len(k) > 0; k = k[:len(k)-1] {
		line := lineOf(doc, k)
		if line == 0 {
			continue
		}
		if p.value != "" && len(k) == len(p.key) {
			if l := entryLine(doc, line, p.value); l > 0 {
				return l
			}
		}
		return line
	}
	return 0
}

// entryLine returns the first line from line onwards, before the next table
// header, that holds value as a basic or literal TOML string; 0 if none.
func entryLine(doc string, line int, value string) int {
	basic := strconv.Quote(value)
	literal := "'" + value + "'"
	lines := strings.Split(doc, "\n")
	for i := line - 1; i < len(lines); i++ {
		l := lines[i]
		if i > line-1 && strings.HasPrefix(strings.TrimSpace(l), "[") && !strings.HasPrefix(strings.TrimSpace(l), "[\"") {
			break
		}
		if strings.Contains(l, basic) || strings.Contains(l, literal) {
			return i + 1
		}
	}
	return 0
}
