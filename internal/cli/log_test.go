package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/audit"
)

// TestLogRowShowsWhatRan: a row's arguments show what a command ran however
// it is padded: runs of blanks (here under the record's cap, so the record
// keeps them) are counted, a long command keeps its end, and abridged
// arguments name their length and hash.
func TestLogRowShowsWhatRan(t *testing.T) {
	command := func(c string) json.RawMessage { b, _ := json.Marshal(map[string]string{"command": c}); return b }
	var mixed strings.Builder
	for i := 0; mixed.Len() < 300; i++ {
		mixed.WriteString("abc"[i%3 : i%3+1])
	}
	var abridged audit.Record
	abridged.SetArgs(command("ls" + strings.Repeat("\t", 5000) + "; echo PAYLOAD"))
	tests := []struct {
		name string
		args json.RawMessage
		rec  *audit.Record
		want []string
	}{
		{"short", json.RawMessage(`{"path":"a.txt"}`), nil, []string{`  {"path":"a.txt"}`}},
		{"blanks under the cap", command("ls" + strings.Repeat(" ", 3000) + "; echo PAYLOAD"), nil, []string{`{"command":"ls…[3000 blanks]…; echo PAYLOAD"}`}},
		{"a long command", command("echo " + mixed.String() + "; echo PAYLOAD"), nil, []string{`{"command":"echo abcabc`, `…`, `; echo PAYLOAD"}`}},
		{"abridged", nil, &abridged, []string{`{"command":"ls…[5000 blanks]…; echo PAYLOAD"} [abridged: ` + itoa(abridged.ArgsBytes) + ` bytes, sha256 ` + abridged.ArgsSHA256[:12] + `…]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := audit.Record{Kind: audit.KindCall, Session: "ses_x", CallID: "call_x", Tool: "shell", Decision: "allowed", Class: "ok", Args: tt.args}
			if tt.rec != nil {
				r.Args, r.ArgsBytes, r.ArgsSHA256 = tt.rec.Args, tt.rec.ArgsBytes, tt.rec.ArgsSHA256
			}
			row := formatRecord(r)
			for _, w := range tt.want {
				if !strings.Contains(row, w) {
					t.Errorf("row %q\nwant it to hold %q", row, w)
				}
			}
			if len(row) > 300 {
				t.Errorf("row of %d bytes", len(row))
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
