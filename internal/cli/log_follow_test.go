package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/audit"
)

// TestLogFollowSeesAReplacedFile (red team, audit 11): airlock log --follow
// remembered how far it had read each records file by name only. A file
// cut back (logrotate's copytruncate) or replaced by another (the session's
// directory removed and its id opened again) was then shorter than that
// offset and ignored, its new records never shown, until it grew past the
// old offset, when they were read from the middle of a line. A follower
// starts such a file over.
func TestLogFollowSeesAReplacedFile(t *testing.T) {
	dir := t.TempDir()
	ses := filepath.Join(dir, "ses_x")
	write := func(ids ...string) {
		t.Helper()
		lg, err := audit.Open(ses)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if err := lg.Write(audit.Record{Kind: audit.KindCall, Session: "ses_x", CallID: id, Tool: "glob", Decision: "allowed", Class: "ok"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := lg.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var out, errs strings.Builder
	p := &logPrinter{w: &out, errw: &errs, json: true, offsets: map[string]int64{}, lines: map[string]int{}}
	follow := func() string {
		t.Helper()
		out.Reset()
		if err := p.scan(dir, ""); err != nil {
			t.Fatal(err)
		}
		p.flush()
		return out.String()
	}
	write("call_old1", "call_old2", "call_old3")
	if got := follow(); strings.Count(got, "call_old") != 3 {
		t.Fatalf("first scan: %s", got)
	}
	for _, replace := range []struct {
		name string
		do   func() error
	}{
		{"truncated", func() error { return os.Truncate(filepath.Join(ses, audit.FileName), 0) }},
		{"replaced", func() error { return os.RemoveAll(ses) }},
	} {
		if err := replace.do(); err != nil {
			t.Fatal(err)
		}
		id := "call_after_" + replace.name
		write(id)
		if got := follow(); !strings.Contains(got, id) {
			t.Errorf("%s file: its new record was not shown: %q", replace.name, got)
		}
		// Grown past where the old file ended: whole records, from its start.
		write("call_more1_"+replace.name, "call_more2_"+replace.name, "call_more3_"+replace.name, "call_more4_"+replace.name)
		if got := follow(); strings.Count(got, "call_more") != 4 {
			t.Errorf("%s file grown: %q", replace.name, got)
		}
		if got := errs.String(); strings.Count(got, "was cut back or replaced") != 1 || strings.Contains(got, "not a record") {
			t.Errorf("%s file: stderr %q; want it named once as cut back or replaced, and no line that is not a record", replace.name, got)
		}
		errs.Reset()
		// Start the next case from a file the follower has read whole.
		out.Reset()
	}
}
