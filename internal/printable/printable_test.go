package printable

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestText(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain text is unchanged", "hello, wörld 日本語 👍\n\tindented\n", "hello, wörld 日本語 👍\n\tindented\n"},
		{"OSC 52 writes the clipboard", "\x1b]52;c;aGk=\x07", `\x1b]52;c;aGk=\a`},
		{"CSI clears the screen", "\x1b[2J\x1b[H", `\x1b[2J\x1b[H`},
		{"carriage return and backspace overwrite", "safe\rrm -rf\b", `safe\rrm -rf\b`},
		{"NUL, DEL, form feed, vertical tab", "\x00\x7f\f\v\x01", `\x00\x7f\f\v\x01`},
		{"C1 CSI and NEL", "\u009b2J\u0085", `\u009b2J\u0085`},
		{"right-to-left override", "abc\u202edef", `abc\u202edef`},
		{"every bidi control", "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069", `\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069`},
		{"invisible format characters", "\u200b\ufeff\u00ad\u2060", `\u200b\ufeff\u00ad\u2060`},
		{"tag characters", "\U000e0041\U000e007f", `\U000e0041\U000e007f`},
		{"line and paragraph separators", "a\u2028b\u2029c", `a\u2028b\u2029c`},
		{"joiners stay for emoji", "👩\u200d💻 a\u200cb", "👩\u200d💻 a\u200cb"},
		{"bytes that are not UTF-8", "a\xff\xfeb\xe2\x80", `a\xff\xfeb\xe2\x80`},
		{"a real U+FFFD stays", "\ufffd", "\ufffd"},
		{"a backslash stays", `C:\dir\x1b`, `C:\dir\x1b`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Text(tt.in); got != tt.want {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestLine(t *testing.T) {
	if got, want := Line("a\nb\tc\x1b"), `a\nb\tc\x1b`; got != want {
		t.Errorf("Line = %q, want %q", got, want)
	}
}

// FuzzText: whatever goes in, what comes out is valid UTF-8 with no control
// or format character but newline, tab and the joiners, and no line break
// at all from Line.
func FuzzText(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b]52;c;aGk=\x07", "\u202e\xff\r\b", "\u009b\U000e0041"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, layout := range []bool{true, false} {
			out := escape(s, layout)
			if !utf8.ValidString(out) {
				t.Fatalf("escape(%q, %v) = %q: not UTF-8", s, layout, out)
			}
			for _, r := range out {
				if (r == '\n' || r == '\t') && layout || r == 0x200c || r == 0x200d {
					continue
				}
				if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) {
					t.Fatalf("escape(%q, %v) = %q: holds %U", s, layout, out, r)
				}
			}
			if !layout && strings.ContainsAny(out, "\n\t") {
				t.Fatalf("Line(%q) = %q: not one line", s, out)
			}
		}
	})
}
