package redact

import (
	"bytes"
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
	// The longest form is the URL-encoded one, "sk-live-7f3a%2F9c1e" (19
	// bytes): CutSuffix drops the last 18 bytes of any text, whatever they are.
	r := NewAs(map[string]string{"TOK": "sk-live-7f3a/9c1e", "B": "xyz"}, func(n string) string { return "[secret " + n + "]" })
	for _, tt := range []struct{ in, want string }{
		{"auth=Bearer sk-live-7f3a/9c1", "auth=Beare"},
		{"auth=Bearer sk-live-7f3a\\/9c", "auth=Beare"}, // the JSON form, cut
		{"auth=Bearer sk-live-7f3a%2F9", "auth=Beare"},  // the URL form, cut
		{"auth=Bearer ~~~~~~~~~~~~~~~", "auth=Bear"},    // the same, whatever the bytes
		{"ends with s and more text", "ends wi"},        // not only what begins a value
		{"nothing here", ""},
		{"aaaaaaaaa€bbbbbbbbbbbbbbbbb", "aaaaaaaaa"}, // back to a rune's start
		{"", ""},
	} {
		if got := r.CutSuffix(tt.in); got != tt.want {
			t.Errorf("CutSuffix(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := r.String("a sk-live-7f3a/9c1e b"); got != "a [secret TOK] b" {
		t.Errorf("String with a label = %q", got)
	}
	var nilR *Redactor
	if got := nilR.CutSuffix("sk-"); got != "sk-" {
		t.Errorf("nil Redactor changed %q", got)
	}
}
