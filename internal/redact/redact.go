// Package redact replaces secret values, however an encoder spelled them,
// in text: what airlock records and what a model reads. It uses
// the standard library only, so the tools inside a sandbox (package tool,
// the runner) use the same rules as the broker (package secret, which
// loads the values).
package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Redactor replaces known secret values with "[redacted:NAME]": the value
// itself and the value spelled with escapes, however an encoder chose to
// write each of its characters: JSON and JavaScript escapes ("\u0026",
// "\u002B" or "\u002b", "\/", "\u{2b}", "\x2b"), percent-encoding in
// either case ("%2B", "%2b", "+" for a space) and HTML character references
// ("&#43;", "&#x2B;", "&plus;", "&amp;"), mixed freely with plain
// characters. An encoder escapes what it likes (.NET's JSON writer "+",
// Go's html/template "+" as "&#43;", .NET's URL encoder in lower-case hex),
// and whichever it chose, the text still is the secret to whoever reads it.
// So are the value's bytes in hex or base64 (standard or URL alphabet, at
// any alignment: the characters that hold its bits alone), as a dump of a
// request shows them, and any of these with its ASCII letters in another
// case, as an error page that shouts what it quotes writes them.
// The zero value redacts nothing. It is safe for concurrent use once built.
type Redactor struct {
	names  []string
	values [][]byte
	// lower are values with their ASCII letters in lower case, for the
	// match that ignores case (folded).
	lower [][]byte
	// raw are the values themselves, longest first, for the spelled-out
	// match (spelled); starts marks the bytes such a match may start with.
	raw    []named
	starts [256]bool
	// label is what replaces a value of the secret name; nil: "[redacted:NAME]".
	label func(name string) string
}

type named struct{ name, value string }

// NewAs is New with label(NAME) in place of "[redacted:NAME]".
func NewAs(values map[string]string, label func(name string) string) *Redactor {
	r := New(values)
	r.label = label
	return r
}

func (r *Redactor) labelOf(i int) string { return r.labelName(r.names[i]) }

func (r *Redactor) labelName(name string) string {
	if r.label != nil {
		return r.label(name)
	}
	return "[redacted:" + name + "]"
}

// New returns a Redactor for values (by name). Values shorter than
// four bytes are still redacted; longer forms are replaced first so that a
// secret containing another is not half-replaced.
func New(values map[string]string) *Redactor {
	type form struct{ name, text string }
	var forms []form
	seen := map[string]bool{}
	for n, v := range values {
		if v == "" {
			continue
		}
		for _, f := range encodedForms(v) {
			if !seen[f] {
				seen[f] = true
				forms = append(forms, form{n, f})
			}
		}
	}
	sort.Slice(forms, func(i, j int) bool {
		a, b := forms[i], forms[j]
		if len(a.text) != len(b.text) {
			return len(a.text) > len(b.text)
		}
		if a.name != b.name {
			return a.name < b.name
		}
		return a.text < b.text
	})
	r := &Redactor{}
	for _, f := range forms {
		r.names = append(r.names, f.name)
		r.values = append(r.values, []byte(f.text))
		r.lower = append(r.lower, asciiLower([]byte(f.text)))
	}
	for n, v := range values {
		if v != "" {
			r.raw = append(r.raw, named{n, v})
			r.starts[v[0]] = true
		}
	}
	for _, c := range []byte(escapeStarts) {
		r.starts[c] = true
	}
	sort.Slice(r.raw, func(i, j int) bool {
		a, b := r.raw[i], r.raw[j]
		if len(a.value) != len(b.value) {
			return len(a.value) > len(b.value)
		}
		return a.name < b.name
	})
	return r
}

// encodedForms returns v and the forms encoders give it: inside a JSON
// string as Go (HTML-safe), JavaScript, Python (ASCII only) and PHP ("\/")
// write it, and percent-encoded as a URL's query and path encode it.
func encodedForms(v string) []string {
	out := []string{v}
	var plain bytes.Buffer
	enc := json.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	js := strings.TrimSuffix(plain.String(), "\n")
	js = js[1 : len(js)-1]
	html, _ := json.Marshal(v)
	var ascii strings.Builder
	for _, c := range js {
		if c < utf8.RuneSelf {
			ascii.WriteRune(c)
			continue
		}
		for _, u := range utf16.Encode([]rune{c}) {
			fmt.Fprintf(&ascii, "\\u%04x", u)
		}
	}
	out = append(out, js, string(html[1:len(html)-1]), ascii.String(),
		strings.ReplaceAll(js, "/", "\\/"), url.QueryEscape(v), url.PathEscape(v))
	if len(v) >= minDumped {
		out = append(out, hex.EncodeToString([]byte(v)))
	}
	return append(out, base64Spans(v)...)
}

// minDumped is the shortest value whose hex or base64 form is redacted:
// a shorter one's is too likely to be found in any long dump.
const minDumped = 6

// base64Spans returns the characters of v's bytes in base64 (standard and
// URL alphabets) that hold v's bits alone, at each of the three alignments
// v may have in a longer text that was encoded ("Bearer " and v, say).
func base64Spans(v string) []string {
	if len(v) < minDumped {
		return nil
	}
	var out []string
	for off := 0; off < 3; off++ {
		b := append(make([]byte, off, off+len(v)), v...)
		start, end := (off*8+5)/6, (off+len(v))*8/6
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			out = append(out, enc.EncodeToString(b)[start:end])
		}
	}
	return out
}

// asciiLower returns b with its ASCII letters in lower case, as a new
// slice of the same length.
func asciiLower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

// folded replaces every value found in b with its ASCII letters in any
// case, and reports whether it replaced any.
func (r *Redactor) folded(b []byte) ([]byte, bool) {
	if len(r.lower) == 0 {
		return b, false
	}
	lb := asciiLower(b)
	changed := false
	for i, v := range r.lower {
		if !bytes.Contains(lb, v) {
			continue
		}
		label := []byte(r.labelOf(i))
		var nb, nl []byte
		for {
			k := bytes.Index(lb, v)
			if k < 0 {
				break
			}
			nb = append(append(nb, b[:k]...), label...)
			nl = append(append(nl, lb[:k]...), asciiLower(label)...)
			b, lb = b[k+len(v):], lb[k+len(v):]
		}
		b, lb = append(nb, b...), append(nl, lb...)
		changed = true
	}
	return b, changed
}

// Bytes returns b with every secret value replaced.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil {
		return b
	}
	// Every form, in any case (folded finds them as they are too).
	if out, ok := r.folded(b); ok {
		b = out
	}
	if len(r.raw) > 0 && bytes.ContainsAny(b, escapeStarts) {
		if s, ok := r.spelled(string(b)); ok {
			return []byte(s)
		}
	}
	return b
}

// String returns s with every secret value replaced.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	// Every form, in any case (folded finds them as they are too).
	if out, ok := r.folded([]byte(s)); ok {
		s = string(out)
	}
	if len(r.raw) > 0 && strings.ContainsAny(s, escapeStarts) {
		if out, ok := r.spelled(s); ok {
			return out
		}
	}
	return s
}

// escapeStarts are the bytes an escaped spelling of a character starts
// with ("+" stands for a space in a URL's query).
const escapeStarts = `\%&+`

// spelled replaces every value spelled with escapes (see Redactor), longest
// values first at each offset, and reports whether it replaced any.
func (r *Redactor) spelled(s string) (string, bool) {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		if !r.starts[s[i]] {
			i++
			continue
		}
		end := -1
		c := s[i]
		escaped := strings.IndexByte(escapeStarts, c) >= 0
		for _, v := range r.raw {
			if c != v.value[0] && !escaped {
				continue
			}
			if e, ok := matchSpelled(s, i, v.value); ok {
				b.WriteString(s[last:i])
				b.WriteString(r.labelName(v.name))
				end = e
				break
			}
		}
		if end < 0 {
			i++
			continue
		}
		last, i = end, end
	}
	if last == 0 {
		return s, false
	}
	b.WriteString(s[last:])
	return b.String(), true
}

// matchSpelled reports whether s holds v at i, each byte of v either
// itself or within an escape that spells it, and where that spelling ends.
func matchSpelled(s string, i int, v string) (int, bool) {
	for k := 0; k < len(v); {
		if i >= len(s) {
			return 0, false
		}
		if dec, n := unescapeAt(s, i); n > 0 && strings.HasPrefix(v[k:], dec) {
			i, k = i+n, k+len(dec)
			continue
		}
		if s[i] != v[k] && !(s[i] == '+' && v[k] == ' ') {
			return 0, false
		}
		i, k = i+1, k+1
	}
	return i, true
}

// minCut is the least CutSuffix drops, for a Redactor of any value.
const minCut = 1023

// maxSpelled is the most bytes that spell one byte of a value: "&#x" and
// eight hex digits and ";" for an ASCII character (unescapeAt reads no
// longer reference), fewer per byte for any other.
const maxSpelled = 12

// unescapeAt decodes the escape that starts at s[i], if one does: the bytes
// it stands for (UTF-8 for a character, one byte for %XX and \xXX) and its
// length; n is 0 if none starts there.
func unescapeAt(s string, i int) (dec string, n int) {
	rest := s[i:]
	switch {
	case len(rest) >= 3 && rest[0] == '%':
		if b, ok := hexByte(rest[1:3]); ok {
			return string([]byte{b}), 3
		}
	case len(rest) >= 2 && rest[0] == '\\':
		return unescapeBackslash(rest)
	case len(rest) >= 3 && rest[0] == '&':
		return unescapeReference(rest)
	}
	return "", 0
}

func unescapeBackslash(rest string) (string, int) {
	switch c := rest[1]; c {
	case '"', '\\', '/', '\'', '`':
		return string(c), 2
	case 'b':
		return "\b", 2
	case 'f':
		return "\f", 2
	case 'n':
		return "\n", 2
	case 'r':
		return "\r", 2
	case 't':
		return "\t", 2
	case 'x':
		if len(rest) >= 4 {
			if b, ok := hexByte(rest[2:4]); ok {
				return string([]byte{b}), 4
			}
		}
	case 'u':
		if len(rest) >= 4 && rest[2] == '{' {
			end := strings.IndexByte(rest[3:min(len(rest), 3+7)], '}')
			if end > 0 {
				if c, ok := hexRune(rest[3 : 3+end]); ok {
					return string(c), 3 + end + 1
				}
			}
			return "", 0
		}
		if len(rest) < 6 {
			return "", 0
		}
		u, ok := hexRune(rest[2:6])
		if !ok {
			return "", 0
		}
		if utf16.IsSurrogate(u) {
			if len(rest) >= 12 && rest[6] == '\\' && rest[7] == 'u' {
				if lo, ok := hexRune(rest[8:12]); ok {
					if c := utf16.DecodeRune(u, lo); c != utf8.RuneError {
						return string(c), 12
					}
				}
			}
			return "", 0
		}
		return string(u), 6
	}
	return "", 0
}

// unescapeReference decodes an HTML character reference ending in ";":
// "&#DDD;", "&#xHHH;" (at most eight digits) or a named one for an ASCII
// character.
func unescapeReference(rest string) (string, int) {
	end := strings.IndexByte(rest[1:min(len(rest), 12)], ';')
	if end < 1 {
		return "", 0
	}
	body := rest[1 : 1+end]
	n := 1 + end + 1
	if body[0] != '#' {
		if c, ok := namedRefs[body]; ok {
			return c, n
		}
		return "", 0
	}
	digits, base := body[1:], 10
	if len(digits) > 0 && (digits[0] == 'x' || digits[0] == 'X') {
		digits, base = digits[1:], 16
	}
	if len(digits) == 0 || len(digits) > 8 {
		return "", 0
	}
	var c rune
	for i := 0; i < len(digits); i++ {
		d, ok := hexDigit(digits[i])
		if !ok || int(d) >= base {
			return "", 0
		}
		c = c*rune(base) + rune(d)
	}
	if !utf8.ValidRune(c) {
		return "", 0
	}
	return string(c), n
}

// namedRefs are the HTML named character references of ASCII characters
// that an encoder may write.
var namedRefs = map[string]string{
	"excl": "!", "quot": `"`, "QUOT": `"`, "num": "#", "dollar": "$", "percnt": "%",
	"amp": "&", "AMP": "&", "apos": "'", "lpar": "(", "rpar": ")", "ast": "*",
	"midast": "*", "plus": "+", "comma": ",", "period": ".", "sol": "/",
	"colon": ":", "semi": ";", "lt": "<", "LT": "<", "equals": "=", "gt": ">",
	"GT": ">", "quest": "?", "commat": "@", "lsqb": "[", "lbrack": "[",
	"bsol": `\`, "rsqb": "]", "rbrack": "]", "Hat": "^", "lowbar": "_",
	"UnderBar": "_", "grave": "`", "lcub": "{", "lbrace": "{", "verbar": "|",
	"vert": "|", "rcub": "}", "rbrace": "}", "Tab": "\t", "NewLine": "\n",
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func hexByte(s string) (byte, bool) {
	hi, ok1 := hexDigit(s[0])
	lo, ok2 := hexDigit(s[1])
	return hi<<4 | lo, ok1 && ok2
}

func hexRune(s string) (rune, bool) {
	var c rune
	for i := 0; i < len(s); i++ {
		d, ok := hexDigit(s[i])
		if !ok {
			return 0, false
		}
		c = c<<4 | rune(d)
	}
	return c, len(s) > 0 && c <= utf8.MaxRune
}

// CutSuffix returns s less its last bytes, at least as many as the longest
// spelling of any value has less one (maxSpelled bytes for each of its
// bytes; rounded up to one less than a power of two, at least minCut, so
// the count tells no value's length; and back to the start of a rune),
// whatever those bytes are: all that a text cut short (at an output cap, a read limit) can
// hold of a value it was cut inside, which String, matching whole values
// only, leaves. It does not look at what it drops: where the end of a text
// is the reader's to choose (a server that reflects the URL, padded to put
// a guess at the cut), an end that read differently for the start of a
// secret than for other bytes would tell the secret a byte a guess.
func (r *Redactor) CutSuffix(s string) string {
	if r == nil {
		return s
	}
	n := 0
	for _, v := range r.values {
		n = max(n, len(v)-1)
	}
	for _, v := range r.raw {
		n = max(n, maxSpelled*len(v.value)-1)
	}
	if n == 0 {
		return s
	}
	// What is dropped must not follow the values' lengths either, which a
	// reader who chose the text's end would measure: one less than a power
	// of two, at least minCut, so every value of up to 85 bytes drops the
	// same.
	w := minCut + 1
	for w-1 < n {
		w *= 2
	}
	n = w - 1
	if n >= len(s) {
		return ""
	}
	cut := len(s) - n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
