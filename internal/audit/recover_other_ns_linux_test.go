package audit_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockhq/airlock/internal/audit"
)

// TestRecoverLeavesAnotherPIDNamespacesSession: two brokers may share one
// records directory from different PID namespaces (two containers over one
// volume, two hosts over one network file system). A pid names a process
// only in its own namespace: the other broker's pid, read here, is another
// process or none, so Recover took its live session for a dead one,
// recorded its calls in flight and its close as interrupted and removed
// its live directory while it ran (its next call then could not be marked
// in flight, and a later crash of it could not be recovered). A session
// whose owner ran in another PID namespace, or on another boot, is left
// alone: whether it still runs cannot be told from here.
func TestRecoverLeavesAnotherPIDNamespacesSession(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to create a PID and mount namespace (a container's)")
	}
	root := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperLiveSessionInOwnPIDNamespace$")
	cmd.Env = append(os.Environ(), "AIRLOCK_TEST_LIVE_HELPER="+root)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	// The helper says "live" once its session and call are marked.
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && sc.Text() != "live" {
	}
	if sc.Err() != nil || sc.Text() != "live" {
		t.Fatalf("the helper did not mark its session live: %v", sc.Err())
	}
	done, err := audit.Recover(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 0 {
		t.Errorf("Recover took %v, the live session of a broker in another PID namespace", done)
	}
	if _, err := os.Stat(filepath.Join(root, audit.LiveDir, "ses_other")); err != nil {
		t.Errorf("the other broker's live directory: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "ses_other", audit.FileName)); err == nil && strings.Contains(string(b), "interrupted") {
		t.Errorf("the other broker's live session was recorded as interrupted:\n%s", b)
	}
}

// TestHelperLiveSessionInOwnPIDNamespace is the other broker of
// TestRecoverLeavesAnotherPIDNamespacesSession: PID 1 of its own PID
// namespace with its own /proc, as in a container, it marks a session and
// a call live and waits for its stdin to close.
func TestHelperLiveSessionInOwnPIDNamespace(t *testing.T) {
	root := os.Getenv("AIRLOCK_TEST_LIVE_HELPER")
	if root == "" {
		t.Skip("run by TestRecoverLeavesAnotherPIDNamespacesSession")
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("proc", "/proc", "proc", 0, ""); err != nil {
		t.Fatal(err)
	}
	l, err := audit.OpenLive(root, "ses_other")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Begin(audit.InFlight{Kind: audit.KindCall, CallID: "call_1", Tool: "shell"}); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("live\n")
	buf := make([]byte, 1)
	os.Stdin.Read(buf)
	l.Close()
}
