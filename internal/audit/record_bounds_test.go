package audit_test

import (
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/audit"
)

// Every text field of a record is bounded, as a call's arguments are
// (SetArgs): a refusal reason or a detail that echoes a model's megabyte
// string, a tool name as long, is abridged (runs of blanks counted, the
// middle cut) when the record is written, whoever wrote it.
func TestRecordTextFieldsAreBounded(t *testing.T) {
	dir := t.TempDir()
	lg, err := audit.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	huge := "start" + strings.Repeat(" ", 1<<20) + strings.Repeat("x", 1<<20) + "end"
	if err := lg.Write(audit.Record{
		Kind: audit.KindCall, Session: "ses_1", CallID: "call_1",
		Tool: huge, Decision: "refused", Rule: huge, Reason: huge, Detail: huge,
		Risks: []string{huge, "short"}, Host: huge, Addr: huge, Remote: huge, WorkID: huge,
	}); err != nil {
		t.Fatal(err)
	}
	if err := lg.Close(); err != nil {
		t.Fatal(err)
	}
	recs, problems, err := audit.ReadAll(dir+"/..", "")
	if err != nil || len(problems) > 0 {
		t.Fatalf("ReadAll: %v %v", err, problems)
	}
	var r *audit.Record
	for i := range recs {
		if recs[i].CallID == "call_1" {
			r = &recs[i]
		}
	}
	if r == nil {
		t.Fatal("record not found")
	}
	fields := map[string]string{"tool": r.Tool, "rule": r.Rule, "reason": r.Reason, "detail": r.Detail,
		"risk": r.Risks[0], "host": r.Host, "addr": r.Addr, "remote": r.Remote, "work_id": r.WorkID}
	for name, v := range fields {
		if len(v) > audit.MaxText+256 {
			t.Errorf("%s: %d bytes kept, want at most about %d", name, len(v), audit.MaxText)
		}
		if !strings.HasPrefix(v, "start") || !strings.HasSuffix(v, "end") || !strings.Contains(v, "blanks]") {
			t.Errorf("%s: abridged to %.80q…: want its start, its end and the blanks counted", name, v)
		}
	}
	if r.Risks[1] != "short" {
		t.Errorf("a short risk changed: %q", r.Risks[1])
	}
}
