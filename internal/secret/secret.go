// Package secret loads secret values from their sources and redacts them from
// anything airlock records. Values live only in memory: they travel to a
// sandbox inside the input frame, never in the environment, argv or a file,
// and every record, log line and error passes through a Redactor first.
package secret

import (
	"errors"
	"fmt"
	"strings"

	"github.com/airlockhq/airlock/internal/redact"
	"github.com/airlockhq/airlock/internal/regularfile"
)

// ErrEmpty is returned for a source that yields an empty value.
var ErrEmpty = errors.New("secret is empty")

// MaxFileBytes is the most a secret's file may hold: a secret goes in an
// HTTP header, and no server takes a header this long.
const MaxFileBytes = 64 << 10

// readFile reads a secret's file, which must be a regular file of at most
// MaxFileBytes, opened without waiting and judged before a byte is read
// (regularfile): a FIFO with no writer would hold the broker's session
// open for good, and a device (/dev/zero) or a file of any size would be
// read whole into the broker's memory.
func readFile(name string) ([]byte, error) {
	b, err := regularfile.Read(name, MaxFileBytes, true)
	if errors.Is(err, regularfile.ErrTooLarge) {
		return nil, fmt.Errorf("%s is larger than %d KiB, the most a secret holds", name, MaxFileBytes>>10)
	}
	return b, err
}

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
		b, err := readFile(ref)
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
