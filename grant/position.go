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
