package linux_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
)

// deepEnv makes TestDeepPlaceholderBroker the broker that
// TestDeepPlaceholderSwept kills: its value is the tree, then the state
// directory, split by a newline.
const deepEnv = "AIRLOCK_TEST_DEEP_PLACEHOLDER_BROKER"

// deepComponent and deepLevels make a directory whose path is longer
// than 64 KiB: longer than a journal line bufio.Scanner reads, and than
// PATH_MAX.
var deepComponent = strings.Repeat("d", 250)

const deepLevels = 270

// TestDeepPlaceholderSwept: a sandbox makes a nested repository more
// than 64 KiB of path deep, which the next session protects and so
// journals (every path a hold may make a placeholder at is journalled,
// existing or not) as one line longer than bufio.Scanner takes. When that
// broker was killed, the sweep stopped at that line (bufio.ErrTooLong)
// and removed none of the placeholders the journal named, in any tree
// (the .envrc at the top of this one stayed), nor the journal, at this
// start or any later one.
func TestDeepPlaceholderSwept(t *testing.T) {
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
	// (A shell's cd refuses a path past PATH_MAX; perl's chdir takes one
	// directory at a time.)
	out, err := runInGrant(t, g, w, `perl -e 'for (1..`+strconv.Itoa(deepLevels)+`) { mkdir "`+deepComponent+`" or die; chdir "`+deepComponent+`" or die }
mkdir ".git"; mkdir ".git/objects"; mkdir ".git/refs";
open(my $h, ">", ".git/HEAD") or die; print $h "ref: refs/heads/main\n"; close $h;
print "planted\n"'`)
	if err != nil || !strings.Contains(out, "planted") {
		t.Fatalf("the first session's script: %v\n%s", err, out)
	}
	deep := w + strings.Repeat("/"+deepComponent, deepLevels) + "/.git"
	g, err = grant.FromFlags(w, grant.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if !contains(g.Protected(), deep) {
		t.Fatal("the grant does not protect the deep repository")
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
	envrc := filepath.Join(w, ".envrc")
	if _, err := os.Lstat(envrc); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no placeholder at %s while the call runs: %v", envrc, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	waitNoProcs(t, "987870")

	b, err := linux.New(&linux.Options{Executable: os.Args[0], Cgroups: linux.CgroupsOptional, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if _, err := os.Lstat(envrc); err == nil {
		t.Errorf("the killed broker's placeholder %s was not swept", envrc)
	}
	if ents, _ := os.ReadDir(filepath.Join(state, ".placeholders")); len(ents) != 0 {
		t.Errorf("the killed broker's journal was left: %v", ents)
	}
}

// TestDeepPlaceholderBroker is the broker TestDeepPlaceholderSwept kills
// while its call runs.
func TestDeepPlaceholderBroker(t *testing.T) {
	env := os.Getenv(deepEnv)
	if env == "" {
		t.Skip("runs only as the child of TestDeepPlaceholderSwept")
	}
	w, state, _ := strings.Cut(env, "\n")
	b, err := linux.New(&linux.Options{Executable: os.Args[0], Cgroups: linux.CgroupsOptional, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	g, err := grant.FromFlags(w, grant.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	spec := &sandbox.Spec{Masks: g.Masks(), ReadOnly: g.Protected(), ReadOnlyDirs: g.ProtectedDirs(), Cwd: w,
		Env:     []string{"PATH=/usr/bin:/bin", "HOME=/tmp"},
		Command: []string{"/bin/sh", "-c", "touch started; sleep 987870"},
		Limits:  sandbox.Limits{Wall: 120 * time.Second, AllowUnenforced: true}}
	for _, m := range g.Mounts() {
		spec.Mounts = append(spec.Mounts, sandbox.Mount{Source: m.Source, Writable: m.Writable})
	}
	_, err = b.Run(context.Background(), spec)
	t.Fatalf("the call ended: %v", err)
}
