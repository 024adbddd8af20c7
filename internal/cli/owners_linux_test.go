package cli

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestExecWarnsOfTreesOfAnotherOwner: airlock run as root on a working tree
// of an ordinary user says why the native sandbox cannot write it (its
// files show as nobody's there) and what to do, instead of leaving the
// user with Permission denied; on root's own tree it says nothing.
func TestExecWarnsOfTreesOfAnotherOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the warning is about airlock run as root")
	}
	airlock, err := exec.LookPath("airlock")
	if err != nil {
		t.Fatalf("the test binary is not on PATH as airlock: %v", err)
	}
	run := func(dir string) string {
		cmd := exec.Command(airlock, "exec", "--", "true")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "AIRLOCK_STATE_DIR="+t.TempDir())
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("airlock exec in %s: %v (stderr %q)", dir, err, stderr.String())
		}
		return stderr.String()
	}
	users := t.TempDir()
	if err := os.Chown(users, 1234, 1234); err != nil {
		t.Fatal(err)
	}
	if got := run(users); !strings.Contains(got, `warning: read-write path "`+users+`" belongs to uid 1234`) || !strings.Contains(got, "run airlock as that user") {
		t.Errorf("in a tree of uid 1234, stderr %q; want a warning naming the tree, its owner and the fix", got)
	}
	if got := run(t.TempDir()); strings.Contains(got, "belongs to uid") {
		t.Errorf("in root's own tree, stderr %q; want no owner warning", got)
	}
}
