package linux_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
)

// TestPlaceholdersAcrossBrokers: two backends stand for two airlock
// processes (each has its own placeholder count) running sandboxes over one
// tree at once. No sandbox may fail for a placeholder that vanished, none may
// create a protected path that did not exist, and the tree is left as it was.
func TestPlaceholdersAcrossBrokers(t *testing.T) {
	d := newDirs(t)
	first := backend(t)
	second, err := linux.New(&linux.Options{Executable: os.Args[0], Cgroups: linux.CgroupsOptional})
	if err != nil {
		t.Fatalf("second backend: %v", err)
	}
	protected := []string{filepath.Join(d.W, ".bashrc"), filepath.Join(d.W, ".git"), filepath.Join(d.W, ".git/hooks"), filepath.Join(d.W, ".vscode")}
	n := 24
	if testing.Short() {
		n = 8
	}
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			b := first
			if i%2 == 1 {
				b = second
			}
			var so, se bytes.Buffer
			spec := &sandbox.Spec{
				Mounts:   d.mounts(),
				ReadOnly: protected,
				Env:      []string{"PATH=/usr/bin:/bin"},
				Cwd:      d.W,
				Command:  []string{"/bin/sh", "-c", "echo x > .bashrc 2>/dev/null && echo ESCAPED; mkdir .vscode/x 2>/dev/null && echo ESCAPED; touch .git/hooks/pre-commit 2>/dev/null && echo ESCAPED; true"},
				Limits:   sandbox.Limits{Wall: 30 * time.Second, AllowUnenforced: acceptUnenforced},
				Stdout:   &so, Stderr: &se,
			}
			res, err := b.Run(context.Background(), spec)
			switch {
			case err != nil:
				errs <- "run: " + err.Error()
			case res.ExitCode != 0:
				errs <- "exit " + se.String()
			case bytes.Contains(so.Bytes(), []byte("ESCAPED")):
				errs <- "a protected path was created: " + so.String()
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	entries, err := os.ReadDir(d.W)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left in the tree: %s", e.Name())
	}
}

// TestPlaceholderNeverRemovesUserDirectories: an empty directory of the
// user's at a protected name stays after the call.
func TestPlaceholderNeverRemovesUserDirectories(t *testing.T) {
	d := newDirs(t)
	mine := filepath.Join(d.W, ".vscode")
	if err := os.Mkdir(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	o := run(t, &sandbox.Spec{Mounts: d.mounts(), ReadOnly: []string{mine}, Cwd: d.W, Command: []string{"/bin/sh", "-c", "touch .vscode/x 2>&1; true"}})
	if !bytes.Contains([]byte(o.stdout), []byte("Read-only file system")) {
		t.Errorf("the user's .vscode was writable: %q", o.stdout)
	}
	if fi, err := os.Stat(mine); err != nil || !fi.IsDir() {
		t.Fatalf("the user's empty .vscode was removed: %v", err)
	}
}
