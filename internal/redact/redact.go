// Package redact replaces secret values, and the forms common encoders
// give them, in text: what airlock records and what a model reads. It uses
// the standard library only, so the tools inside a sandbox (package tool,
// the runner) use the same rules as the broker (package secret, which
// loads the values).
package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Redactor replaces known secret values with "[redacted:NAME]": the value
// itself and the forms common encoders give it inside the text airlock
// records, so that a call's arguments sent with JSON escapes ("\u0026" for
// "&", "\/" for "/", "\u00e9" for "é") or a URL with the value
// percent-encoded are redacted too. (Escapes no common encoder writes, such
// as "\u0074" for "t", are not recognised.) The zero value redacts nothing.
// It is safe for concurrent use once built.
type Redactor struct {
	names  []string
	values [][]byte
	// label is what replaces a value of the secret name; nil: "[redacted:NAME]".
	label func(name string) string
}

// NewAs is New with label(NAME) in place of "[redacted:NAME]".
func NewAs(values map[string]string, label func(name string) string) *Redactor {
	r := New(values)
	r.label = label
	return r
}

func (r *Redactor) labelOf(i int) string {
	if r.label != nil {
		return r.label(r.names[i])
	}
	return "[redacted:" + r.names[i] + "]"
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
	}
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
	return append(out, js, string(html[1:len(html)-1]), ascii.String(),
		strings.ReplaceAll(js, "/", "\\/"), url.QueryEscape(v), url.PathEscape(v))
}

// Bytes returns b with every secret value replaced.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil {
		return b
	}
	for i, v := range r.values {
		if bytes.Contains(b, v) {
			b = bytes.ReplaceAll(b, v, []byte(r.labelOf(i)))
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
			s = strings.ReplaceAll(s, string(v), r.labelOf(i))
		}
	}
	return s
}

// CutSuffix returns s less its last bytes, as many as the longest form of
// any value has less one (and back to the start of a rune), whatever those
// bytes are: all that a text cut short (at an output cap, a read limit) can
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
	if n == 0 {
		return s
	}
	if n >= len(s) {
		return ""
	}
	cut := len(s) - n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
