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
	"github.com/airlockhq/airlock/internal/testenv"
)

// TestFullRecordsDirRefusesBeforeRunning (issue 11.5): with the records
// directory full, a call is refused before anything runs, and the caller is
// told the audit is the reason.
func TestFullRecordsDirRefusesBeforeRunning(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small file system (CI runs as root)")
	}
	records := t.TempDir()
	if err := unix.Mount(testenv.FSSource, records, "tmpfs", 0, "size=256k"); err != nil {
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
