package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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

// TestLogTailHoldsOnlyTheTail: --tail N over a long history holds about N
// records, not every record of every file, and still shows the last N by
// time across files written out of step with each other.
func TestLogTailHoldsOnlyTheTail(t *testing.T) {
	dir := t.TempDir()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const perFile = 6000
	for i, name := range []string{"ses_a", "ses_b"} {
		if err := os.Mkdir(filepath.Join(dir, name), 0o700); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for n := range perFile {
			// ses_a holds the even seconds, ses_b the odd ones.
			r := audit.Record{Time: base.Add(time.Duration(2*n+i) * time.Second), Kind: audit.KindCall, Session: name, CallID: "call_" + strconv.Itoa(2*n+i), Tool: "glob", Decision: "allowed", Class: "ok"}
			line, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(line)
			b.WriteByte('\n')
		}
		if err := os.WriteFile(filepath.Join(dir, name, audit.FileName), []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var out, errs strings.Builder
	p := &logPrinter{w: &out, errw: &errs, json: true, offsets: map[string]int64{}, lines: map[string]int{}, tail: 3}
	if err := p.scan(dir, ""); err != nil {
		t.Fatal(err)
	}
	if held := len(p.pending); held > 2*p.tail+1024 {
		t.Errorf("held %d records for --tail %d", held, p.tail)
	}
	p.flush()
	var got []string
	for line := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
		var r audit.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		got = append(got, r.CallID)
	}
	want := []string{"call_11997", "call_11998", "call_11999"}
	if !slices.Equal(got, want) {
		t.Errorf("--tail 3 showed %v, want %v", got, want)
	}
	if errs.Len() != 0 {
		t.Errorf("stderr: %s", errs.String())
	}
}
