package broker

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/sandbox"
)

// countingBackend counts runs and never builds a sandbox.
type countingBackend struct{ runs int }

func (b *countingBackend) Run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	b.runs++
	return nil, errors.New("not used")
}

func (b *countingBackend) Report() sandbox.Report { return sandbox.Report{Backend: "counting"} }

// TestAuditFailureMidSession: once a record cannot be written (a full disk),
// the call that already ran says what it did and that its record is lost
// (never that it did not run), and every later call is refused before it
// runs.
func TestAuditFailureMidSession(t *testing.T) {
	ws := t.TempDir()
	g, err := grant.FromFlags(ws, grant.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	b := &countingBackend{}
	s, err := Open(&Options{Grant: g, Backend: b, RecordsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	full := t.TempDir()
	if err := os.Symlink("/dev/full", filepath.Join(full, audit.FileName)); err != nil {
		t.Fatal(err)
	}
	lg, err := audit.Open(full)
	if err != nil {
		t.Fatal(err)
	}
	s.log.Close()
	s.log = lg

	res, err := s.Call(context.Background(), "read_file", json.RawMessage(`{"path":"x"}`))
	if err != nil || res.Refused() || !strings.Contains(res.Output.Content, "this call ran, but its audit record could not be written") {
		t.Fatalf("first call with a full disk: %+v, %v; want its result and the lost record named", res, err)
	}
	runs := b.runs
	if runs != 1 {
		t.Fatalf("runs = %d, want 1", runs)
	}
	_, err = s.Call(context.Background(), "read_file", json.RawMessage(`{"path":"x"}`))
	if !errors.Is(err, ErrAudit) {
		t.Fatalf("second call: %v, want ErrAudit", err)
	}
	if b.runs != runs {
		t.Fatalf("a call ran after the audit log failed")
	}
}

// TestFullRecordsDirRefusesBeforeRunning (issue 11.5): with the records
// directory full, a call is refused before anything runs, and the caller is
// told the audit is the reason.
func TestFullRecordsDirRefusesBeforeRunning(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small file system (CI runs as root)")
	}
	records := t.TempDir()
	if err := unix.Mount("tmpfs", records, "tmpfs", 0, "size=256k"); err != nil {
		t.Fatalf("mounting a small tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(records, unix.MNT_DETACH) })
	ws := t.TempDir()
	g, err := grant.FromFlags(ws, grant.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	b := &countingBackend{}
	s, err := Open(&Options{Grant: g, Backend: b, RecordsDir: records, Pool: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fill, err := os.Create(filepath.Join(records, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for {
		if _, err := fill.Write(buf); err != nil {
			break
		}
	}
	fill.Close()
	res, err := s.Call(context.Background(), "shell", json.RawMessage(`{"command":"true"}`))
	switch {
	case errors.Is(err, ErrAudit): // not even the refusal could be recorded
	case err == nil && res.Refused() && res.Decision.Rule == "audit" && strings.Contains(res.Output.Content, "nothing runs"):
	default:
		t.Fatalf("call with a full records directory: %+v, %v; want a refusal naming the audit, or ErrAudit", res, err)
	}
	if b.runs != 0 {
		t.Fatalf("the call ran (%d runs) though its records could not be kept", b.runs)
	}
}
