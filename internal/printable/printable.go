// Package printable makes text airlock did not write safe to show a person
// on a terminal. Control characters (C0, DEL and C1: escape sequences such as
// OSC 52, which writes the clipboard, or CSI 2J, which clears the screen;
// carriage returns and backspaces, which overwrite what was shown),
// bidirectional controls (U+202E reverses what follows) and other invisible
// format characters, and bytes that are not UTF-8 all become visible
// escapes, so the text can neither drive the terminal nor look like
// something it is not. What a person reads is made printable here; what a
// program reads (JSON, the model's content, the audit log) stays exact.
package printable

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/airlockhq/airlock/wire"
)

// Text returns s ready for a terminal: newlines and tabs stay, and every
// other control character, every format character (category Cf, which holds
// the bidirectional controls U+061C, U+200E-U+200F, U+202A-U+202E and
// U+2066-U+2069, zero-width spaces, U+FEFF and the tag characters) but the
// joiners U+200C and U+200D that emoji and several scripts need, the line and
// paragraph separators, and each byte that is not UTF-8 (as wire.ValidUTF8
// marks it) is replaced by an escape: \a \b \f \r \v, \xNN, \uNNNN or
// \UNNNNNNNN. Text that needs none comes back unchanged. Escapes are for
// reading and are not reversible: a backslash already in s is kept as is.
func Text(s string) string { return escape(s, true) }

// Line is Text for text that must stay on one line (a host name, a field of
// a log line): newlines and tabs are escaped too.
func Line(s string) string { return escape(s, false) }

func escape(s string, layout bool) string {
	s = wire.ValidUTF8(s)
	clean := true
	for _, r := range s {
		if hidden(r, layout) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range s {
		if !hidden(r, layout) {
			b.WriteRune(r)
			continue
		}
		switch r {
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\v':
			b.WriteString(`\v`)
		default:
			b.WriteString(hexEscape(r))
		}
	}
	return b.String()
}

// hidden reports whether r must be escaped; with layout, newlines and tabs
// may stay.
func hidden(r rune, layout bool) bool {
	switch {
	case r == '\n' || r == '\t':
		return !layout
	case r < 0x20 || r == 0x7f:
		return true
	case r < 0x80:
		return false
	case r == 0x200c || r == 0x200d: // zero-width non-joiner and joiner
		return false
	case r == utf8.RuneError:
		return false // a U+FFFD that was in the text: printable
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

func hexEscape(r rune) string {
	h := strconv.FormatInt(int64(r), 16)
	switch {
	case r < 0x80:
		return `\x` + strings.Repeat("0", 2-len(h)) + h
	case r <= 0xffff:
		return `\u` + strings.Repeat("0", 4-len(h)) + h
	default:
		return `\U` + strings.Repeat("0", 8-len(h)) + h
	}
}
