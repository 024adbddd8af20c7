package wire

import (
	"encoding/json"
	"testing"
)

func TestValidUTF8(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"plain é 日本 \x1b\u202e", "plain é 日本 \x1b\u202e"}, // controls are not its business
		{"a\xffb", `a\xffb`},
		{"\xe2\x80", `\xe2\x80`},         // a cut character
		{"\xc0\xaf", `\xc0\xaf`},         // an overlong encoding
		{"\xed\xa0\x80", `\xed\xa0\x80`}, // a surrogate
		{"\ufffd", "\ufffd"},
	}
	for _, tt := range tests {
		got := ValidUTF8(tt.in)
		if got != tt.want {
			t.Errorf("ValidUTF8(%q) = %q, want %q", tt.in, got, tt.want)
		}
		// What it returns survives a JSON round trip exactly.
		b, _ := json.Marshal(got)
		var back string
		if err := json.Unmarshal(b, &back); err != nil || back != got {
			t.Errorf("ValidUTF8(%q) = %q does not survive JSON: %q, %v", tt.in, got, back, err)
		}
	}
}
