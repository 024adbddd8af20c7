// Package secret loads secret values from their sources and redacts them from
// anything airlock records. Values live only in memory: they travel to a
// sandbox inside the input frame, never in the environment, argv or a file,
// and every record, log line and error passes through a Redactor first.
package secret

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/airlockhq/airlock/internal/redact"
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

// Redactor replaces known secret values, and their encoded forms, with
// "[redacted:NAME]" (package redact).
type Redactor = redact.Redactor

// NewRedactor returns a Redactor for values (by name): redact.New.
func NewRedactor(values map[string]string) *Redactor { return redact.New(values) }
