package audit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/procid"
)

// TestReadAllShowsEverythingReadable (issue 11.4): a corrupt line in one
// session's file and a torn last line in another are named, file and line,
// and every other record is still returned.
func TestReadAllShowsEverythingReadable(t *testing.T) {
	root := t.TempDir()
	write := func(session, text string) string {
		dir := filepath.Join(root, session)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, FileName)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rec := func(id string) string {
		b, _ := json.Marshal(Record{Kind: KindCall, Session: "s", CallID: id, Time: time.Now()})
		return string(b) + "\n"
	}
	a := write("a", rec("c1")+"{not json\n"+rec("c2"))
	b := write("b", rec("c3")+`{"kind":"call","call_id":"c4`)
	recs, problems, err := ReadAll(root, "")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.CallID)
	}
	if strings.Join(ids, ",") != "c1,c2,c3" {
		t.Errorf("records %v, want c1,c2,c3", ids)
	}
	if len(problems) != 2 {
		t.Fatalf("problems %v, want 2", problems)
	}
	want := map[string]string{a: a + ":2: not a record", b: b + ":2: torn record"}
	for _, p := range problems {
		if !strings.HasPrefix(p.Error(), want[p.File]) {
			t.Errorf("problem %q, want it to start %q", p.Error(), want[p.File])
		}
	}
}

// TestRecoverWritesInterruptedRecords (issue 11.3): the live directory of a
// session whose broker died yields an interrupted record for each call and
// background work in flight and the session's close; a live session's is
// left alone.
func TestRecoverWritesInterruptedRecords(t *testing.T) {
	root := t.TempDir()
	l, err := OpenLive(root, "ses_dead")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []InFlight{{Kind: KindCall, CallID: "call_1", Tool: "shell"}, {Kind: KindBackgroundStart, WorkID: "wrk_1", CallID: "call_0", Tool: "shell"}, {Kind: KindCall, CallID: "call_2", Tool: "read_file"}} {
		if err := l.Begin(f); err != nil {
			t.Fatal(err)
		}
	}
	l.End(InFlight{CallID: "call_2"})
	// The owner is a process that is gone.
	dead, _ := json.Marshal(owner{Process: procid.ID("99999999-1")})
	if err := os.WriteFile(filepath.Join(root, LiveDir, "ses_dead", ownerFile), dead, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLive(root, "ses_alive"); err != nil {
		t.Fatal(err)
	}
	done, err := Recover(root, nil)
	if err != nil || len(done) != 1 || done[0] != "ses_dead" {
		t.Fatalf("Recover = %v, %v; want [ses_dead]", done, err)
	}
	recs, problems, err := ReadAll(root, "ses_dead")
	if err != nil || len(problems) > 0 {
		t.Fatal(err, problems)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Kind+":"+r.CallID+r.WorkID+":"+string(r.Class))
	}
	want := "call:call_1:interrupted background-end:wrk_1:interrupted session::interrupted"
	if strings.Join(got, " ") != want {
		t.Errorf("records %v, want %s", got, want)
	}
	if _, err := os.Stat(filepath.Join(root, LiveDir, "ses_dead")); !os.IsNotExist(err) {
		t.Errorf("the dead session's live directory stays: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, LiveDir, "ses_alive", ownerFile)); err != nil {
		t.Errorf("a live session was recovered: %v", err)
	}
	if again, _ := Recover(root, nil); len(again) != 0 {
		t.Errorf("a second Recover did %v again", again)
	}
}
