package broker

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

// TestEgressHeldWhileRecordsFail: a session's egress proxies ask its audit
// log before each connection, so once a record cannot be written (a full
// disk) no connection goes through that could not be recorded, in a call
// or in background work.
func TestEgressHeldWhileRecordsFail(t *testing.T) {
	ws := t.TempDir()
	g, err := grant.FromFlags(ws, grant.Flags{AllowHosts: []string{"example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(&Options{Grant: g, Backend: &countingBackend{}, RecordsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if o := s.egressOptions(&call{id: "call_1"}, nil); o.Hold == nil || o.Hold() != nil {
		t.Fatal("a healthy session's proxy is held, or asks nothing")
	}
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
	_ = lg.Write(audit.Record{Kind: audit.KindSession, Session: "x", Decision: "open"})
	o := s.egressOptions(&call{id: "call_2"}, nil)
	if err := o.Hold(); err == nil {
		t.Error("egress is not held once the records cannot be written")
	}
}
