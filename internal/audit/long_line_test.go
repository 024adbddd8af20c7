package audit_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/airlockhq/airlock/internal/audit"
)

// TestLongLineIsNotHeld: a records file with a line of hundreds of
// megabytes (torn or planted; here a sparse run of NULs) is read by
// Recover at every start of airlock and by airlock log. Decode held the
// whole line four times over (read, joined, made a string, made bytes
// again): 2 GiB for a 512 MiB line. Past audit.MaxLine a line is read to
// its end without being kept and reported as not a record, and the
// records around it are read.
func TestLongLineIsNotHeld(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 512 MiB")
	}
	root := t.TempDir()
	dir := filepath.Join(root, "ses_1")
	l, err := audit.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(audit.Record{Kind: audit.KindCall, Session: "ses_1", CallID: "call_1"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, audit.FileName), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	const long = 2 * audit.MaxLine
	if _, err := f.WriteAt([]byte("\n"), st.Size()+long); err != nil { // sparse
		t.Fatal(err)
	}
	f.Close()
	l, err = audit.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(audit.Record{Kind: audit.KindCall, Session: "ses_1", CallID: "call_2"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	recs, problems, err := audit.ReadAll(root, "")
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 2*audit.MaxLine+16<<20 {
		t.Errorf("reading a %d MiB line allocated %d MiB", long>>20, n>>20)
	}
	if len(recs) != 2 || recs[0].CallID != "call_1" || recs[1].CallID != "call_2" {
		t.Errorf("records around the long line: %+v", recs)
	}
	if len(problems) != 1 || !errors.Is(problems[0].Err, audit.ErrLineTooLong) {
		t.Errorf("problems: %v, want one line too long", problems)
	}
}
