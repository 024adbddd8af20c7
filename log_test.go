package airlock_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/cli"
)

// TestGoAPISessionsShowInLog: a session the Go API opens with no
// RecordsDir writes its records where `airlock log` reads them (the state
// directory, as the CLI's sessions do), so the CLI's log shows its calls.
func TestGoAPISessionsShowInLog(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	t.Setenv("AIRLOCK_STATE_DIR", state)
	// Where the Go API used to write: kept apart, so a record there is
	// not found by accident.
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	s, err := airlock.Open(&airlock.Options{Dir: t.TempDir(), Unsandboxed: true, Pool: -1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Call(context.Background(), "write_file", map[string]any{"path": "a.txt", "content": "hello\n"})
	if err != nil || res.IsError {
		t.Fatalf("write_file: %v %+v", err, res)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := cli.Main(context.Background(), []string{"log", "--json", "--session", s.ID()}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("airlock log: exit %d: %s", code, stderr.String())
	}
	var found bool
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var r audit.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("airlock log --json line %q: %v", line, err)
		}
		if r.Kind == audit.KindCall && r.CallID == res.CallID && r.Tool == "write_file" && r.Class == "ok" {
			found = true
		}
	}
	if !found {
		t.Errorf("airlock log does not show call %s of the Go API's session %s:\n%s", res.CallID, s.ID(), stdout.String())
	}
	if _, err := os.Stat(filepath.Join(state, s.ID())); err != nil {
		t.Errorf("the session's records are not in the state directory: %v", err)
	}
}
