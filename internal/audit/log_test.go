package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A record is one JSON line, appended to a 0600 file in a 0700 directory,
// stamped with the time when it has none, and readable back as written.
func TestLogWritesOneLinePerRecord(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ses_1")
	l, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	exit := 3
	recs := []Record{
		{Kind: KindCall, Session: "ses_1", CallID: "c1", Tool: "shell", Args: json.RawMessage(`{"command":"echo hi"}`), Class: "ok", Exit: &exit, Time: at},
		{Kind: KindEgress, Session: "ses_1", CallID: "c1", Host: "a.test", Port: 443, Decision: "refused", Reason: "multi\nline"},
	}
	before := time.Now()
	for _, r := range recs {
		if err := l.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l.Path() != filepath.Join(dir, FileName) {
		t.Errorf("Path = %q", l.Path())
	}
	b, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"); len(lines) != 2 {
		t.Fatalf("%d lines, want 2 (a newline in a field must stay escaped):\n%s", len(lines), b)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, l.Path(): 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v, %v; want %v", path, fi.Mode(), err, want)
		}
	}
	got, problems, err := ReadAll(filepath.Dir(dir), "ses_1")
	if err != nil || len(problems) > 0 || len(got) != 2 {
		t.Fatalf("ReadAll = %d records, %v, %v", len(got), problems, err)
	}
	if !got[0].Time.Equal(at) || got[0].Exit == nil || *got[0].Exit != 3 || string(got[0].Args) != `{"command":"echo hi"}` {
		t.Errorf("first record read back as %+v", got[0])
	}
	if got[1].Time.Before(before) || got[1].Time.Location() != time.UTC || got[1].Reason != "multi\nline" {
		t.Errorf("second record read back as %+v (want a UTC time stamped at write)", got[1])
	}
}

// Reopening appends; it never truncates what an earlier run wrote.
func TestLogAppends(t *testing.T) {
	dir := t.TempDir()
	for i, id := range []string{"c1", "c2"} {
		l, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Write(Record{Kind: KindCall, Session: "s", CallID: id, Time: time.Unix(int64(i), 0)}); err != nil {
			t.Fatal(err)
		}
		l.Close()
	}
	recs, _, err := ReadAll(filepath.Dir(dir), filepath.Base(dir))
	if err != nil || len(recs) != 2 || recs[0].CallID != "c1" || recs[1].CallID != "c2" {
		t.Fatalf("records %+v, %v", recs, err)
	}
}

// After Close every Write fails with ErrClosed, and Healthy says so; a
// second Close is no error.
func TestLogClosed(t *testing.T) {
	l, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Healthy(); err != nil {
		t.Fatalf("Healthy before any write: %v", err)
	}
	l.Close()
	if err := l.Write(Record{Kind: KindCall}); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: %v, want ErrClosed", err)
	}
	if err := l.Healthy(); !errors.Is(err, ErrClosed) {
		t.Errorf("Healthy after Close: %v, want ErrClosed", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// A write that fails (here: the file has gone read-only underneath) fails
// every later one with the same error, naming the file: a record is never
// dropped silently and the log never continues with a gap.
func TestLogStaysFailed(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ro, err := os.Open(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	l.f.Close()
	l.f = ro // writes to a read-only descriptor fail with EBADF
	l.mu.Unlock()
	first := l.Write(Record{Kind: KindCall, CallID: "c1"})
	if first == nil || !strings.Contains(first.Error(), "writing audit log "+l.Path()) {
		t.Fatalf("Write to a read-only file: %v, want an error naming the file", first)
	}
	if err := l.Write(Record{Kind: KindCall, CallID: "c2"}); !errors.Is(err, first) {
		t.Errorf("second Write: %v, want the first failure %v", err, first)
	}
	if err := l.Healthy(); !errors.Is(err, first) {
		t.Errorf("Healthy: %v, want the first failure", err)
	}
}

// Open names what it could not create.
func TestOpenErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(filepath.Join(file, "ses")); err == nil || !strings.Contains(err.Error(), `creating records directory "`+filepath.Join(file, "ses")+`"`) {
		t.Errorf("Open under a file: %v", err)
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, FileName), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil || !strings.HasPrefix(err.Error(), "opening audit log: ") {
		t.Errorf("Open where the records file is a directory: %v", err)
	}
}

// Records written at once from many goroutines are whole lines, all there.
func TestLogConcurrentWrites(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	big := strings.Repeat("x", 8<<10) // more than one small write's worth
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 10 {
				if err := l.Write(Record{Kind: KindCall, Session: "s", CallID: big, Signal: i*10 + j}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	l.Close()
	recs, problems, err := ReadAll(filepath.Dir(dir), filepath.Base(dir))
	if err != nil || len(problems) > 0 || len(recs) != 160 {
		t.Fatalf("%d records, problems %v, %v", len(recs), problems, err)
	}
	seen := map[int]bool{}
	for _, r := range recs {
		seen[r.Signal] = true
	}
	if len(seen) != 160 {
		t.Errorf("%d distinct records, want 160", len(seen))
	}
}

// Decode counts lines from first, skips blank ones, reports a bad line and
// goes on, and stops at the first error fn returns.
func TestDecode(t *testing.T) {
	rec := func(id string) string { b, _ := json.Marshal(Record{Kind: KindCall, CallID: id}); return string(b) }
	text := rec("c1") + "\n\n   \n" + "[1,2]\n" + rec("c2") + "\n" + rec("c3") + "\n"
	var ids []string
	var bad []int
	stop := errors.New("stop")
	err := Decode(strings.NewReader(text), 10, func(r Record) error {
		ids = append(ids, r.CallID)
		if r.CallID == "c2" {
			return stop
		}
		return nil
	}, func(line int, torn bool, err error) {
		if torn {
			t.Errorf("line %d called torn", line)
		}
		bad = append(bad, line)
	})
	if !errors.Is(err, stop) {
		t.Errorf("Decode returned %v, want fn's error", err)
	}
	if strings.Join(ids, ",") != "c1,c2" || len(bad) != 1 || bad[0] != 13 {
		t.Errorf("records %v, bad lines %v; want c1,c2 and line 13", ids, bad)
	}
}

// ReadAll with no session reads every session's file and sorts them all by
// time; a root with no records is no error; a session's name picks one.
func TestReadAllSessions(t *testing.T) {
	root := t.TempDir()
	if recs, problems, err := ReadAll(filepath.Join(root, "absent"), ""); err != nil || len(recs)+len(problems) != 0 {
		t.Fatalf("ReadAll of a missing root: %v %v %v", recs, problems, err)
	}
	base := time.Now().UTC()
	for session, offsets := range map[string][]int{"ses_a": {0, 2, 4}, "ses_b": {1, 3}} {
		l, err := Open(filepath.Join(root, session))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range offsets {
			l.Write(Record{Kind: KindCall, Session: session, Time: base.Add(time.Duration(o) * time.Second), Signal: o})
		}
		l.Close()
	}
	recs, _, err := ReadAll(root, "")
	if err != nil {
		t.Fatal(err)
	}
	var order []int
	for _, r := range recs {
		order = append(order, r.Signal)
	}
	if len(order) != 5 || !func() bool {
		for i, o := range order {
			if o != i {
				return false
			}
		}
		return true
	}() {
		t.Errorf("records in order %v, want 0..4 across sessions", order)
	}
	only, _, _ := ReadAll(root, "ses_b")
	if len(only) != 2 || only[0].Session != "ses_b" || only[1].Session != "ses_b" {
		t.Errorf("ReadAll(ses_b) = %+v", only)
	}
}

func TestProblemMessages(t *testing.T) {
	for _, tt := range []struct {
		p    Problem
		want string
	}{
		{Problem{File: "/r/s/audit.jsonl", Line: 7, Err: errors.New("invalid character")}, "/r/s/audit.jsonl:7: not a record: invalid character"},
		{Problem{File: "/r/s/audit.jsonl", Line: 9, Torn: true}, "/r/s/audit.jsonl:9: torn record: the writer stopped mid-line (a crash or a full disk?)"},
	} {
		if got := tt.p.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

// A live session's directory holds its owner and a slot per work in
// flight, holding it; End empties the slot, the next Begin takes it again,
// Close removes the directory.
func TestLiveInFlightFiles(t *testing.T) {
	root := t.TempDir()
	l, err := OpenLive(root, "ses_1")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, LiveDir, "ses_1")
	// contents lists the directory: each file's name, and for a slot the
	// call or work it holds ("-" when it is empty).
	contents := func() string {
		ents, _ := os.ReadDir(dir)
		var out []string
		for _, e := range ents {
			if e.Name() == ownerFile {
				out = append(out, e.Name())
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			var f InFlight
			switch {
			case err != nil:
				t.Fatal(err)
			case len(bytes.TrimSpace(b)) == 0:
				out = append(out, e.Name()+"=-")
			case json.Unmarshal(b, &f) != nil || f.Tool != "shell" || f.Time.IsZero():
				t.Fatalf("slot %s holds %q", e.Name(), b)
			default:
				out = append(out, e.Name()+"="+f.CallID+"/"+f.WorkID)
			}
		}
		return strings.Join(out, " ")
	}
	if got := contents(); got != ownerFile {
		t.Fatalf("a new live directory holds %q, want only %q", got, ownerFile)
	}
	l.Begin(InFlight{Kind: KindCall, CallID: "call_1", Tool: "shell"})
	l.Begin(InFlight{Kind: KindBackgroundStart, CallID: "call_2", WorkID: "wrk_1", Tool: "shell"})
	if got := contents(); got != "owner slot-0.json=call_1/ slot-1.json=call_2/wrk_1" {
		t.Fatalf("live directory holds %q", got)
	}
	if err := l.Begin(InFlight{Kind: KindCall, CallID: "call_1", Tool: "shell"}); err == nil {
		t.Error("a call in flight began again")
	}
	l.End(InFlight{CallID: "call_1"})
	l.End(InFlight{CallID: "never"}) // ending what never began is no error
	if got := contents(); got != "owner slot-0.json=- slot-1.json=call_2/wrk_1" {
		t.Errorf("after End the live directory holds %q", got)
	}
	// A free slot is used again, not a new file made.
	l.Begin(InFlight{Kind: KindCall, CallID: "call_3", Tool: "shell"})
	if got := contents(); got != "owner slot-0.json=call_3/ slot-1.json=call_2/wrk_1" {
		t.Errorf("after a second Begin the live directory holds %q", got)
	}
	l.End(InFlight{CallID: "call_3"})
	// A record shorter than the slot's last is followed by the spaces
	// that blanked that one, and read back whole.
	l.Begin(InFlight{Kind: KindCall, CallID: "call_4", Tool: "shell", Dirs: []string{strings.Repeat("/long", 40)}})
	l.End(InFlight{CallID: "call_4"})
	l.Begin(InFlight{Kind: KindCall, CallID: "call_5", Tool: "shell"})
	if got := contents(); got != "owner slot-0.json=call_5/ slot-1.json=call_2/wrk_1" {
		t.Errorf("after a shorter record the live directory holds %q", got)
	}
	if fl, err := InFlightUnder(root); err != nil || len(fl) != 2 || fl[0].CallID != "call_2" || fl[1].CallID != "call_5" || len(fl[1].Dirs) != 0 {
		t.Errorf("InFlightUnder = %+v, %v; want call_2's work and call_5", fl, err)
	}
	l.End(InFlight{CallID: "call_5"})
	l.End(InFlight{WorkID: "wrk_1"})
	if got := contents(); got != "owner slot-0.json=- slot-1.json=-" {
		t.Errorf("with nothing in flight the live directory holds %q", got)
	}
	// A broker that died now leaves nothing Recover takes for in flight.
	if done, err := Recover(root, nil); err != nil || len(done) != 0 {
		t.Errorf("Recover of a live session: %v %v", done, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Close left the live directory: %v", err)
	}
	if done, err := Recover(root, nil); err != nil || len(done) != 0 {
		t.Errorf("Recover after a clean close: %v %v", done, err)
	}
}

// BenchmarkLiveBeginEnd is one call's in-flight mark: Begin, then End.
func BenchmarkLiveBeginEnd(b *testing.B) {
	l, err := OpenLive(b.TempDir(), "ses_bench")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for i := 0; b.Loop(); i++ {
		f := InFlight{Kind: KindCall, CallID: "call_" + strconv.Itoa(i), Tool: "read_file"}
		if err := l.Begin(f); err != nil {
			b.Fatal(err)
		}
		l.End(f)
	}
}
