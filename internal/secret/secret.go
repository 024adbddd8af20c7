// Package secret loads secret values from their sources and redacts them from
// anything airlock records. Values live only in memory: they travel to a
// sandbox inside the input frame, never in the environment, argv or a file,
// and every record, log line and error passes through a Redactor first.
package secret

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
)

// ErrEmpty is returned for a source that yields an empty value.
var ErrEmpty = errors.New("secret is empty")

// Load reads a secret from source: "env:NAME" (the broker's environment) or
// "file:PATH" (trailing newline trimmed). Errors name the source, never the value.
func Load(source string, getenv func(string) string) (string, error) {
	kind, ref, ok := strings.Cut(source, ":")
	if !ok || ref == "" {
		return "", fmt.Errorf("secret source %q: want env:NAME or file:PATH", source)
	}
	var v string
	switch kind {
	case "env":
		v = getenv(ref)
	case "file":
		b, err := os.ReadFile(ref)
		if err != nil {
			return "", fmt.Errorf("secret source %q: %w", source, err)
		}
		v = strings.TrimRight(string(b), "\r\n")
	default:
		return "", fmt.Errorf("secret source %q: unknown kind %q (want env or file)", source, kind)
	}
	if v == "" {
		return "", fmt.Errorf("secret source %q: %w", source, ErrEmpty)
	}
	return v, nil
}

// Redactor replaces known secret values with "[redacted:NAME]".
// The zero value redacts nothing. It is safe for concurrent use once built.
type Redactor struct {
	names  []string
	values [][]byte
}

// NewRedactor returns a Redactor for values (by name). Values shorter than
// four bytes are still redacted; longer values are replaced first so that a
// secret containing another is not half-replaced.
func NewRedactor(values map[string]string) *Redactor {
	r := &Redactor{}
	names := make([]string, 0, len(values))
	for n, v := range values {
		if v != "" {
			names = append(names, n)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		return len(values[names[i]]) > len(values[names[j]]) || (len(values[names[i]]) == len(values[names[j]]) && names[i] < names[j])
	})
	for _, n := range names {
		r.names = append(r.names, n)
		r.values = append(r.values, []byte(values[n]))
	}
	return r
}

// Bytes returns b with every secret value replaced.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil {
		return b
	}
	for i, v := range r.values {
		if bytes.Contains(b, v) {
			b = bytes.ReplaceAll(b, v, []byte("[redacted:"+r.names[i]+"]"))
		}
	}
	return b
}

// String returns s with every secret value replaced.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	for i, v := range r.values {
		if strings.Contains(s, string(v)) {
			s = strings.ReplaceAll(s, string(v), "[redacted:"+r.names[i]+"]")
		}
	}
	return s
}
