package audit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/procid"
)

// TestRecoverAfterATornRecordKeepsTheInterruptedOnes: a broker that died in
// the middle of writing a record (kill -9 during a write longer than a page,
// or a write cut short by a full disk, whose call's in-flight mark stays so
// that the records account for it later) leaves a line with no newline at
// the end of its records file. The records Recover then appends for the
// session (the call interrupted, the session's close) must be records of
// their own, not glued onto the torn line and read as part of one corrupt
// line: that would lose the very records recovery exists to write.
func TestRecoverAfterATornRecordKeepsTheInterruptedOnes(t *testing.T) {
	root := t.TempDir()
	lg, err := Open(filepath.Join(root, "ses_torn"))
	if err != nil {
		t.Fatal(err)
	}
	if err := lg.Write(Record{Kind: KindSession, Session: "ses_torn", Decision: "open"}); err != nil {
		t.Fatal(err)
	}
	if err := lg.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := OpenLive(root, "ses_torn")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Begin(InFlight{Kind: KindCall, CallID: "call_1", Tool: "shell"}); err != nil {
		t.Fatal(err)
	}
	// The call's record, cut short where the writer stopped.
	whole, _ := json.Marshal(Record{Kind: KindCall, Session: "ses_torn", CallID: "call_1", Tool: "shell", Args: json.RawMessage(`{"command":"` + strings.Repeat("x", 8000) + `"}`)})
	f, err := os.OpenFile(filepath.Join(root, "ses_torn", FileName), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(whole[:4096]); err != nil {
		t.Fatal(err)
	}
	f.Close()
	dead, _ := json.Marshal(owner{Process: procid.ID("99999999-1")})
	if err := os.WriteFile(filepath.Join(root, LiveDir, "ses_torn", ownerFile), dead, 0o600); err != nil {
		t.Fatal(err)
	}

	if done, err := Recover(root, nil); err != nil || len(done) != 1 {
		t.Fatalf("Recover = %v, %v; want [ses_torn]", done, err)
	}
	recs, problems, err := ReadAll(root, "ses_torn")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Kind+":"+r.CallID+":"+string(r.Class)+":"+r.Decision)
	}
	want := "session:::open call:call_1:interrupted:allowed session::interrupted:close"
	if strings.Join(got, " ") != want {
		t.Errorf("records after recovery: %v, want %s (problems: %v)", got, want, problems)
	}
	if len(problems) != 1 || problems[0].Line != 2 || !problems[0].Torn {
		t.Errorf("problems %v, want the torn record alone, on line 2, named torn", problems)
	}
}
