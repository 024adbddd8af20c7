package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

const value = "tok-5ecret/Value+with=odd&chars"

func TestRedactor(t *testing.T) {
	r := New(map[string]string{
		"LONG":  "abcdef-secret-123456",
		"SHORT": "secret", // inside LONG: LONG must be replaced first
		"TINY":  "xy",     // short values are redacted too
		"EMPTY": "",       // redacts nothing, rather than everything
	})
	tests := []struct{ in, want string }{
		{"nothing here", "nothing here"},
		{"a abcdef-secret-123456 b", "a [redacted:LONG] b"},
		{"a secret b secret", "a [redacted:SHORT] b [redacted:SHORT]"},
		{"abcdef-secret-123456secret", "[redacted:LONG][redacted:SHORT]"},
		{"xyz", "[redacted:TINY]z"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := string(r.Bytes([]byte(tt.in))); got != tt.want {
			t.Errorf("Bytes(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// Two values of one length are replaced in name order, so the output
	// does not depend on map order.
	same := New(map[string]string{"B": "abcd", "A": "bcde"})
	for range 20 {
		if got := same.String("abcde"); got != "[redacted:B]e" && got != "a[redacted:A]" {
			t.Fatalf("String = %q", got)
		} else if got != New(map[string]string{"A": "bcde", "B": "abcd"}).String("abcde") {
			t.Fatalf("redaction depends on map order: %q", got)
		}
	}
}

func TestRedactorNilAndZero(t *testing.T) {
	var nilR *Redactor
	if nilR.String(value) != value || string(nilR.Bytes([]byte(value))) != value {
		t.Error("a nil Redactor changed its input")
	}
	var zero Redactor
	if zero.String(value) != value || string(zero.Bytes([]byte(value))) != value {
		t.Error("the zero Redactor changed its input")
	}
	if New(nil).String(value) != value {
		t.Error("a Redactor of no values changed its input")
	}
}

// A Redactor is used by every call of a session at once.
func TestRedactorConcurrent(t *testing.T) {
	r := New(map[string]string{"TOKEN": value})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				if got := r.String("x" + value + "x"); got != "x[redacted:TOKEN]x" {
					t.Errorf("String = %q", got)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// A value is redacted in the forms encoders give it in the text airlock
// records: a call's arguments as Go, JavaScript, Python or PHP write JSON,
// and a URL with the value percent-encoded. The result stays valid JSON.
func TestRedactorEncodedForms(t *testing.T) {
	const v = `p/ss&w<rd> é"q\`
	r := New(map[string]string{"T": v})
	for name, text := range map[string]string{
		"Go json.Marshal":           "{\"path\":\"p/ss\\u0026w\\u003crd\\u003e é\\\"q\\\\\"}",
		"JavaScript JSON.stringify": "{\"path\":\"p/ss&w<rd> é\\\"q\\\\\"}",
		"Python json.dumps":         `{"path": "p/ss&w<rd> \u00e9\"q\\"}`,
		"PHP json_encode":           "{\"path\":\"p\\/ss&w<rd> é\\\"q\\\\\"}",
		"URL query":                 "https://a.test/?t=p%2Fss%26w%3Crd%3E+%C3%A9%22q%5C",
		"URL path":                  "https://a.test/p%2Fss&w%3Crd%3E%20%C3%A9%22q%5C",
	} {
		got := r.String(text)
		if !strings.Contains(got, "[redacted:T]") {
			t.Errorf("%s: %q not redacted: %q", name, text, got)
		}
		if strings.HasPrefix(text, "{") && !json.Valid([]byte(got)) {
			t.Errorf("%s: redacted JSON %q is not valid", name, got)
		}
		if string(r.Bytes([]byte(text))) != got {
			t.Errorf("%s: Bytes and String differ", name)
		}
	}
	// The Go form as Go writes it, for certain.
	b, _ := json.Marshal(map[string]string{"path": v})
	if got := r.Bytes(b); bytes.Contains(got, []byte(`\u0026`)) || !bytes.Contains(got, []byte("[redacted:T]")) {
		t.Errorf("json.Marshal form not redacted: %s", got)
	}
}

func TestRedactorCutSuffix(t *testing.T) {
	// A value may be spelled with escapes, up to maxSpelled bytes for each
	// of its bytes ("&#x0000002F;" for "/"): CutSuffix drops at least the
	// last 12*17-1 = 203 bytes of any text, whatever they are, and as many
	// for any value that short, minCut.
	r := NewAs(map[string]string{"TOK": "sk-live-7f3a/9c1e", "B": "xyz"}, func(n string) string { return "[secret " + n + "]" })
	const window = minCut
	head := "auth=Bearer "
	for _, tail := range []string{
		"sk-live-7f3a/9c1",                    // the value, cut
		"sk-live-7f3a\\/9c",                   // the JSON form, cut
		"sk-live-7f3a%2F9",                    // the URL form, cut
		"sk-live-7f3a%2f9",                    // lower-case hex, cut
		"sk-live-7f3a\\u002F9c",               // .NET's JSON, cut
		"&#x73;&#x6b;&#x2d;&#x6c;&#x69;&#x76", // every byte a reference, cut
		"~~~~~~~~~~~~~~~",                     // the same, whatever the bytes
		"s and more text",                     // not only what begins a value
	} {
		in := head + strings.Repeat("~", window-len(tail)) + tail
		if got := r.CutSuffix(in); got != head {
			t.Errorf("CutSuffix(%q) = %q, want %q", in, got, head)
		}
	}
	for _, tt := range []struct{ in, want string }{
		{"nothing here", ""},
		{"aaaaaaaaa€" + strings.Repeat("b", window-1), "aaaaaaaaa"}, // back to a rune's start
		{"", ""},
	} {
		if got := r.CutSuffix(tt.in); got != tt.want {
			t.Errorf("CutSuffix(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := r.String("a sk-live-7f3a/9c1e b"); got != "a [secret TOK] b" {
		t.Errorf("String with a label = %q", got)
	}
	// The count tells no length: values up to 85 bytes drop minCut, longer
	// ones the next power of two less one.
	for _, tt := range []struct{ n, drop int }{{1, minCut}, {85, minCut}, {86, 2047}, {170, 2047}, {171, 4095}} {
		text := strings.Repeat("~", 5000)
		if got := len(text) - len(New(map[string]string{"V": strings.Repeat("v", tt.n)}).CutSuffix(text)); got != tt.drop {
			t.Errorf("a %d-byte value: CutSuffix dropped %d bytes, want %d", tt.n, got, tt.drop)
		}
	}
	var nilR *Redactor
	if got := nilR.CutSuffix("sk-"); got != "sk-" {
		t.Errorf("nil Redactor changed %q", got)
	}
}

// A value is the value however each of its characters is spelled: every
// escape an encoder may choose, in either case, mixed with plain characters.
func TestRedactorSpelledValue(t *testing.T) {
	r := New(map[string]string{"T": "tok+5ecret/Value=42", "U": "pässwörd😀"})
	for _, text := range []string{
		`"tok\u002B5ecret/Value=42"`,                  // .NET's System.Text.Json
		`"tok\u002b5ecret\u002FValue\u003D42"`,        // any escape, any case
		`tok%2b5ecret%2fValue%3d42`,                   // .NET's HttpUtility.UrlEncode
		`tok&#43;5ecret/Value=42`,                     // Go's html/template
		`tok&#x2B;5ecret&sol;Value&equals;42`,         // hex and named references
		`&#116;&#x6F;&#X6b;\x2b5ecret\/Value=4\u{32}`, // every kind at once
		`p\u00e4ssw\u00F6rd\ud83d\ude00`,              // UTF-16 escapes
		`p%C3%A4ssw%c3%b6rd%F0%9F%98%80`,              // percent-encoded UTF-8
		`p&auml;` + "ssw\u00f6rd&#128512;",            // unknown name: not U's spelling
	} {
		got := r.String(text)
		want := !strings.Contains(text, "&auml;")
		if has := strings.Contains(got, "[redacted:"); has != want {
			t.Errorf("String(%q) = %q; redacted %v, want %v", text, got, has, want)
		}
		if string(r.Bytes([]byte(text))) != got {
			t.Errorf("Bytes(%q) and String differ", text)
		}
	}
	// Only the value is replaced, and text that merely looks escaped stays.
	for in, want := range map[string]string{
		`a "tok\u002B5ecret/Value=42" b`:   `a "[redacted:T]" b`,
		`x=tok%2B5ecret%2FValue%3D42&y=1`:  `x=[redacted:T]&y=1`,
		`tok\u002B5ecret/Value=4`:          `tok\u002B5ecret/Value=4`,
		`%zz &#; &#x; &#99999999999; \u12`: `%zz &#; &#x; &#99999999999; \u12`,
		`\ud83d alone, &bogus; and 100%`:   `\ud83d alone, &bogus; and 100%`,
	} {
		if got := r.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}

func BenchmarkRedactorSpelled(b *testing.B) {
	r := New(map[string]string{"A": "tok+5ecret/Value=42", "B": "another-secret-value-0123456789"})
	text := strings.Repeat(`{"k":"v\u0026w","p":"100%","h":"&amp;t+o"} `, 1<<14) // 700 KiB
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		r.String(text)
	}
}

// A value shows through a dump of its bytes (hex, base64 in either
// alphabet, at whatever alignment it had in the text encoded) and with its
// letters in another case: each is the value to whoever reads it.
func TestRedactorDumpedAndCaseChanged(t *testing.T) {
	const v = "tok-5ecret/Value+42"
	r := New(map[string]string{"T": v})
	for name, text := range map[string]string{
		"upper":         "AUTH=BEARER " + strings.ToUpper(v),
		"lower":         "auth: " + strings.ToLower(v) + ".",
		"hex":           "dump " + hex.EncodeToString([]byte(v)),
		"HEX":           "DUMP " + strings.ToUpper(hex.EncodeToString([]byte("x"+v))),
		"base64 at 0":   base64.StdEncoding.EncodeToString([]byte(v)),
		"base64 at 1":   base64.StdEncoding.EncodeToString([]byte("a" + v + "z")),
		"base64 at 2":   base64.StdEncoding.EncodeToString([]byte("ab" + v)),
		"base64url":     base64.RawURLEncoding.EncodeToString([]byte("Bearer " + v)),
		"base64 header": base64.StdEncoding.EncodeToString([]byte("Basic " + v)),
	} {
		got := r.String(text)
		if !strings.Contains(got, "[redacted:T]") {
			t.Errorf("%s: %q not redacted: %q", name, text, got)
		}
		if string(r.Bytes([]byte(text))) != got {
			t.Errorf("%s: Bytes and String differ", name)
		}
	}
	// Text that only looks like a dump is left as it is.
	for _, text := range []string{"deadbeef", "QmVhcmVy", "TOK-5ECRET"} {
		if got := r.String(text); got != text {
			t.Errorf("%q redacted to %q", text, got)
		}
	}
}
