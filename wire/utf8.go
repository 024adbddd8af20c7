package wire

import (
	"strings"
	"unicode/utf8"
)

// ValidUTF8 returns s with every byte that is not part of valid UTF-8
// written as a visible `\xNN` escape (lower-case hex); valid text comes back
// unchanged. A frame carries only UTF-8 JSON, and encoding/json would turn
// such bytes into U+FFFD without a trace; tools pass text that is not their
// own (a command's output, a fetched body, a file name) through ValidUTF8 so
// whoever reads it sees that, and which, bytes were there. The escape is
// for reading, not reversible: text that already holds a backslash followed
// by "x" and two hex digits looks the same.
func ValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			const hex = "0123456789abcdef"
			b.WriteString(`\x`)
			b.WriteByte(hex[s[i]>>4])
			b.WriteByte(hex[s[i]&0xf])
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
