package wire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeStrict(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		wantErr string // substring; "" means success
		wantKey string // the FieldError key, when one is expected
	}{
		{"ok", `{"tool":"read_file","args":{"path":"x"},"context":{"call_id":"c1"}}`, "", ""},
		{"unknown field", `{"tool":"x","extra":1}`, "unknown field", "extra"},
		{"unknown nested", `{"tool":"x","context":{"call_id":"c","bogus":true}}`, "unknown field", "context.bogus"},
		{"duplicate key", `{"tool":"a","tool":"b"}`, "duplicate key", "tool"},
		{"duplicate nested in raw args", `{"tool":"a","args":{"path":"x","path":"y"}}`, "duplicate key", "args.path"},
		{"case-only key", `{"Tool":"a"}`, "differs only in case", "Tool"},
		{"case-only nested", `{"context":{"CALL_ID":"c"}}`, "differs only in case", "context.CALL_ID"},
		{"wrong type", `{"tool":5}`, `field "tool"`, ""},
		{"trailing data", `{"tool":"a"} {}`, "trailing data", ""},
		{"not json", `{"tool":`, "invalid JSON", ""},
		{"duplicate in map", `{"context":{"secrets":{"A":"1","A":"2"}}}`, "duplicate key", "context.secrets.A"},
		{"surrogate pair", `{"tool":"\ud83d\ude00","args":{"path":"a\u00e9\u20ac"}}`, "", ""},
		{"U+FFFD sent as text", `{"tool":"x","args":{"path":"f\ufffd"}}`, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in ToolInput
			err := DecodeStrict([]byte(tt.input), &in)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("DecodeStrict: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("DecodeStrict error = %v, want it to contain %q", err, tt.wantErr)
			}
			if tt.wantKey != "" {
				var fe *FieldError
				if !errors.As(err, &fe) || fe.Key != tt.wantKey {
					t.Fatalf("error %v: want a FieldError for key %q", err, tt.wantKey)
				}
				if !strings.Contains(err.Error(), tt.wantKey) {
					t.Fatalf("error %q does not name key %q", err, tt.wantKey)
				}
			}
		})
	}
}

// TestDecodeStrictEncoding: a string that is not text is refused, naming
// its key, wherever it is; encoding/json alone would decode it as U+FFFD.
func TestDecodeStrictEncoding(t *testing.T) {
	tests := []struct {
		name   string
		input  string
		key    string // EncodingError.Key
		inKey  bool
		detail string // substring of the error
	}{
		{"raw bytes in raw args", "{\"args\":{\"path\":\"f\xff\xfe\"}}", "args.path", false, "byte 0xff at offset 1 in the string is not valid UTF-8"},
		{"truncated sequence", "{\"tool\":\"\xe2\x82\"}", "tool", false, "byte 0xe2 at offset 0 in the string"},
		{"overlong encoding", "{\"tool\":\"\xc0\xaf\"}", "tool", false, "byte 0xc0"},
		{"UTF-8 encoded surrogate", "{\"tool\":\"\xed\xa0\x80\"}", "tool", false, "byte 0xed"},
		{"lone high surrogate", `{"args":{"path":"f\ud800"}}`, "args.path", false, `the escape \ud800 at offset 1 in the string is a lone UTF-16 surrogate`},
		{"high surrogate then letter", `{"args":{"path":"\ud800\u0041"}}`, "args.path", false, `\ud800`},
		{"lone low surrogate", `{"args":{"path":"\udc00x"}}`, "args.path", false, `\udc00`},
		{"two high surrogates", `{"args":{"path":"\ud800\ud800"}}`, "args.path", false, `\ud800 at offset 0`},
		{"after an escaped backslash", `{"tool":"\\\ud800"}`, "tool", false, `\ud800 at offset 2`},
		{"in an array", `{"args":{"paths":["ok","\udfff"]}}`, "args.paths[1]", false, `\udfff`},
		{"in a secret", "{\"context\":{\"secrets\":{\"K\":\"v\x80\"}}}", "context.secrets.K", false, "byte 0x80"},
		{"in a key", "{\"args\":{\"pa\xfeth\":\"x\"}}", `args."pa\xfeth"`, true, "byte 0xfe at offset 2 in the string"},
		{"surrogate in a key", `{"args":{"p\ud800":"x"}}`, `args."p\\ud800"`, true, "lone UTF-16 surrogate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in ToolInput
			err := DecodeStrict([]byte(tt.input), &in)
			var ee *EncodingError
			if !errors.As(err, &ee) {
				t.Fatalf("DecodeStrict(%q) = %v, want an *EncodingError", tt.input, err)
			}
			if ee.Key != tt.key || ee.InKey != tt.inKey {
				t.Errorf("key = %q (in key %v), want %q (%v)", ee.Key, ee.InKey, tt.key, tt.inKey)
			}
			if !strings.Contains(err.Error(), tt.detail) || !strings.Contains(err.Error(), "must be UTF-8") {
				t.Errorf("error %q lacks %q", err, tt.detail)
			}
		})
	}
	t.Run("field_named", func(t *testing.T) {
		var v struct {
			Path string `json:"path"`
		}
		err := DecodeStrict([]byte(`{"path":"f\ud800"}`), &v)
		if err == nil || !strings.HasPrefix(err.Error(), `field "path": `) {
			t.Errorf("error = %v, want it to start with field \"path\"", err)
		}
	})
}

func TestToolOutputRoundTrip(t *testing.T) {
	code := 3
	want := ToolOutput{Content: "hi", IsError: true, Truncated: true, Meta: Meta{ExitCode: &code, OmittedBytes: 10,
		Isolation: &Isolation{Backend: "linux", Features: []string{"userns"}}}}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var got ToolOutput
	if err := DecodeStrict(b, &got); err != nil {
		t.Fatalf("DecodeStrict(%s): %v", b, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("round trip (-want +got):\n%s", diff)
	}
}

func TestExitNamesDistinct(t *testing.T) {
	seen := map[string]int{}
	for _, c := range []int{ExitOK, ExitUsage, ExitBadInput, ExitUnknownTool, ExitBadArgs, ExitLimitSetup, ExitSandboxSetup, ExitInternal, ExitWriteOutput} {
		n := ExitName(c)
		if prev, dup := seen[n]; dup {
			t.Errorf("exit codes %d and %d share the name %q", prev, c, n)
		}
		seen[n] = c
	}
	if ExitName(12345) != "unknown-exit" {
		t.Errorf("ExitName(12345) = %q", ExitName(12345))
	}
}

func TestCheckDuplicateKeys(t *testing.T) {
	for _, tt := range []struct {
		input, wantKey string
	}{
		{`{"method":"a","params":{"name":"x","arguments":{}}}`, ""},
		{`{"params":{"name":"read_file","name":"shell"}}`, "params.name"},
		{`{"method":"a","method":"b"}`, "method"},
		{`{"a":[{"k":1},{"k":2,"k":3}]}`, "a[1].k"},
		{`{"params":{"na\u006de":"read_file","name":"shell"}}`, "params.name"}, // escapes are decoded first
		{`{"Name":"a","name":"b"}`, ""},                                        // keys differing in case are distinct
	} {
		err := CheckDuplicateKeys([]byte(tt.input))
		var fe *FieldError
		switch {
		case tt.wantKey == "" && err != nil:
			t.Errorf("%s: %v, want no error", tt.input, err)
		case tt.wantKey != "" && (!errors.As(err, &fe) || fe.Key != tt.wantKey || fe.Reason != "duplicate key"):
			t.Errorf("%s: %v, want a duplicate key %q", tt.input, err, tt.wantKey)
		}
	}
}
