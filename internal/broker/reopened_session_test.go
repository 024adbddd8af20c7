package broker_test

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// TestKilledReopenedSessionIsClosed (red team, audit 11): a session id may
// be given (Options.ID), and a session opened again under an id it had
// before appends to the same records file. When its broker is killed
// (kill -9), the next start recovers it, and must record its close: but
// recovery read the records file for a close already written and found
// the earlier life's, so the killed life's open was left with no close
// at all, indistinguishable from a session still running.
func TestKilledReopenedSessionIsClosed(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	b := sandboxtest.Unsandboxed(t)
	// The first life: opened and closed cleanly.
	s, err := broker.Open(&broker.Options{Grant: f.grant, Backend: b, RecordsDir: f.records, ID: "ses_reused"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The second life, in a broker that is killed once its session is open.
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledReopenedSessionHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "AIRLOCK_REOPENED_WS="+f.ws, "AIRLOCK_REOPENED_RECORDS="+f.records)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "open" {
	}
	cmd.Process.Kill()
	cmd.Wait()

	// The next start over the same records directory recovers it.
	f.open(t, b, nil)
	var lives []string
	for _, r := range records(t, f.records) {
		if r.Session == "ses_reused" && r.Kind == audit.KindSession {
			lives = append(lives, r.Decision+":"+string(r.Class))
		}
	}
	if got, want := strings.Join(lives, " "), "open: close: open: close:interrupted"; got != want {
		t.Errorf("session records of the reused id: %s; want %s", got, want)
	}
}

// TestKilledReopenedSessionHelper is the broker
// TestKilledReopenedSessionIsClosed kills: it opens the session again and
// waits.
func TestKilledReopenedSessionHelper(t *testing.T) {
	ws := os.Getenv("AIRLOCK_REOPENED_WS")
	if ws == "" {
		t.Skip("runs only as the broker TestKilledReopenedSessionIsClosed kills")
	}
	g, err := grant.FromFlags(ws, grant.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := broker.Open(&broker.Options{Grant: g, Backend: sandboxtest.Unsandboxed(t), RecordsDir: os.Getenv("AIRLOCK_REOPENED_RECORDS"), ID: "ses_reused"}); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("\nopen\n")
	time.Sleep(time.Hour) // killed by the test; a sleeper is never taken for a deadlock
}
