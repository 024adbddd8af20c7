package linux_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
)

// TestNewlinePlaceholderSwept: a sandbox makes a nested repository whose
// configuration names a hooks directory with a newline in its name, which
// the next session holds by a placeholder while it is missing. Its
// journal line was the path as it is, so the sweep after that broker was
// killed read two paths, neither the placeholder's, and left it in the
// tree at every later start (and took the second line, an absolute path
// the sandbox chose anywhere on the host, for one to look at).
func TestNewlinePlaceholderSwept(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := filepath.Join(base, "w")
	state := filepath.Join(base, "state")
	if err := os.Mkdir(w, 0o755); err != nil {
		t.Fatal(err)
	}
	g, err := grant.FromFlags(w, grant.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := runInGrant(t, g, w, `mkdir -p sub/.git/objects sub/.git/refs && printf 'ref: refs/heads/main\n' > sub/.git/HEAD &&
printf '[core]\n\thooksPath = "hooks\\n/x"\n' > sub/.git/config && cat sub/.git/config && echo planted`)
	if err != nil || !strings.Contains(out, "planted") {
		t.Fatalf("the first session's script: %v\n%s", err, out)
	}
	held := filepath.Join(w, "sub", "hooks\n/x")
	g, err = grant.FromFlags(w, grant.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if !contains(g.Protected(), held) {
		for _, p := range g.Protected() {
			t.Logf("protected %q", p)
		}
		t.Fatalf("the grant does not hold %q", held)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestDeepPlaceholderBroker$", "-test.count=1")
	cmd.Env = append(os.Environ(), deepEnv+"="+w+"\n"+state)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(w, "started")
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Lstat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the child broker's call never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Lstat(held); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no placeholder at %q while the call runs: %v", held, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	waitNoProcs(t, "987870")

	b, err := linux.New(&linux.Options{Executable: os.Args[0], Cgroups: linux.CgroupsOptional, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if _, err := os.Lstat(held); err == nil {
		t.Errorf("the killed broker's placeholder %q was not swept", held)
	}
	if _, err := os.Lstat(filepath.Join(w, ".envrc")); err == nil {
		t.Errorf("the killed broker's placeholder .envrc was not swept")
	}
}
