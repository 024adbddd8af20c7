package audit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/procid"
)

// TestRecoverRecordsEachCallOnce: the broker writes a call's record, then
// blanks its in-flight slot; a session's close record, then removes its
// live directory. A broker killed between the two (kill -9, the OOM killer)
// left a slot, or a live directory, for what was recorded already, and
// Recover recorded it a second time, as interrupted: the log then held two
// outcomes for one call (ok and interrupted), and two closes for one
// session. Every call is recorded exactly once.
func TestRecoverRecordsEachCallOnce(t *testing.T) {
	root := t.TempDir()
	lg, err := Open(filepath.Join(root, "ses_x"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := OpenLive(root, "ses_x")
	if err != nil {
		t.Fatal(err)
	}
	exit := 0
	for _, f := range []InFlight{
		{Kind: KindCall, CallID: "call_done", Tool: "shell"},
		{Kind: KindBackgroundStart, WorkID: "wrk_done", CallID: "call_0", Tool: "shell"},
		{Kind: KindCall, CallID: "call_running", Tool: "shell"},
	} {
		if err := l.Begin(f); err != nil {
			t.Fatal(err)
		}
	}
	// Recorded, and the broker killed before their slots were blanked.
	for _, r := range []Record{
		{Kind: KindSession, Session: "ses_x", Decision: "open"},
		{Kind: KindCall, Session: "ses_x", CallID: "call_done", Tool: "shell", Decision: "allowed", Class: "ok", Exit: &exit},
		{Kind: KindBackgroundEnd, Session: "ses_x", WorkID: "wrk_done", Class: "exited", Exit: &exit},
	} {
		if err := lg.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := lg.Close(); err != nil {
		t.Fatal(err)
	}
	dead, _ := json.Marshal(owner{Process: procid.ID("99999999-1")})
	if err := os.WriteFile(filepath.Join(root, LiveDir, "ses_x", ownerFile), dead, 0o600); err != nil {
		t.Fatal(err)
	}
	if done, err := Recover(root, nil); err != nil || len(done) != 1 {
		t.Fatalf("Recover = %v, %v; want [ses_x]", done, err)
	}
	recs, problems, err := ReadAll(root, "ses_x")
	if err != nil || len(problems) > 0 {
		t.Fatal(err, problems)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Kind+":"+r.CallID+r.WorkID+":"+string(r.Class))
	}
	want := "session:: call:call_done:ok background-end:wrk_done:exited call:call_running:interrupted session::interrupted"
	if strings.Join(got, " ") != want {
		t.Errorf("records after recovery:\n  %s\nwant\n  %s", strings.Join(got, " "), want)
	}

	// A session whose close was recorded before its broker died is
	// closed: no second close.
	lg, err = Open(filepath.Join(root, "ses_y"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLive(root, "ses_y"); err != nil {
		t.Fatal(err)
	}
	lg.Write(Record{Kind: KindSession, Session: "ses_y", Decision: "open"})
	lg.Write(Record{Kind: KindSession, Session: "ses_y", Decision: "close"})
	lg.Close()
	if err := os.WriteFile(filepath.Join(root, LiveDir, "ses_y", ownerFile), dead, 0o600); err != nil {
		t.Fatal(err)
	}
	if done, err := Recover(root, nil); err != nil || len(done) != 1 {
		t.Fatalf("Recover = %v, %v; want [ses_y]", done, err)
	}
	recs, _, _ = ReadAll(root, "ses_y")
	if len(recs) != 2 {
		t.Errorf("%d records for a session closed before its broker died, want its open and its close: %+v", len(recs), recs)
	}
	if _, err := os.Stat(filepath.Join(root, LiveDir, "ses_y")); !os.IsNotExist(err) {
		t.Errorf("its live directory stays: %v", err)
	}
}
