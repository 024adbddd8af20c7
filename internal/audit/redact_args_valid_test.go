package audit_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/redact"
)

// TestRedactedArgsStayRecorded (red team, audit 11): the log redacts a
// record's arguments as text, and a secret's value found inside a JSON
// escape (a value that starts "u0041", sent as "\u0041…", whatever it
// stands for) left the arguments invalid JSON once replaced: the record
// could not be encoded and was not written, a call or refusal with no
// record, while the log stayed healthy. Arguments that redaction leaves
// invalid are recorded as a string.
func TestRedactedArgsStayRecorded(t *testing.T) {
	root := t.TempDir()
	l, err := audit.Open(filepath.Join(root, "ses_x"))
	if err != nil {
		t.Fatal(err)
	}
	r := redact.New(map[string]string{"TOKEN": "u0041bcd-tok"})
	l.SetRedact(r.String)
	args := json.RawMessage(`{"command":"echo \u0041bcd-tok"}`)
	// As the log redacts them, and as a writer that redacted them first
	// (the broker) hands them over.
	for _, a := range []json.RawMessage{args, json.RawMessage(r.String(string(args)))} {
		if err := l.Write(audit.Record{Kind: audit.KindCall, Session: "ses_x", CallID: "call_x", Tool: "shell", Args: a}); err != nil {
			t.Fatalf("Write(%s): %v", a, err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	recs, problems, err := audit.ReadAll(root, "")
	if err != nil || len(problems) > 0 || len(recs) != 2 {
		t.Fatalf("records %+v, problems %v, %v", recs, problems, err)
	}
	b, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "bcd-tok") {
		t.Errorf("the secret is in the records: %s", b)
	}
}
