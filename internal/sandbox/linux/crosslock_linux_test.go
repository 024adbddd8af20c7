package linux_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
)

// runAsync runs spec on b under ctx; the channel returned delivers Run's
// error, or one for a payload that did not exit 0.
func runAsync(t *testing.T, ctx context.Context, b *linux.Backend, spec *sandbox.Spec) <-chan error {
	t.Helper()
	if acceptUnenforced {
		spec.Limits.AllowUnenforced = true
	}
	var so, se bytes.Buffer
	spec.Stdout, spec.Stderr = &so, &se
	spec.Env = []string{"PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8"}
	if spec.Limits.Wall == 0 {
		spec.Limits.Wall = 5 * time.Minute
	}
	done := make(chan error, 1)
	go func() {
		res, err := b.Run(ctx, spec)
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("exit %d, signal %d, limit %q; stdout %q stderr %q", res.ExitCode, res.Signal, res.Limit, so.String(), se.String())
		}
		done <- err
	}()
	return done
}

// waitMade waits for path to exist or done to deliver (the sandbox that
// was to make it ended first).
func waitMade(t *testing.T, path string, done <-chan error) {
	t.Helper()
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("the sandbox ended before making %s: %v", path, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// A sandbox of one grant cannot wedge the calls of another by locking a
// file the other's grant protects: the broker takes a shared flock(2) on
// each protected path it holds, and a sandbox whose grant writes the same
// tree (another session, or a call before a repository appeared there)
// can take an exclusive one on the same file and keep it. The broker's
// lock waited for it for ever, with the lock of every placeholder of the
// backend held, so no call of any session could start or end.
func TestCrossLockedProtectedPath(t *testing.T) {
	for _, c := range []struct {
		name   string
		before func(t *testing.T, w string) // makes the protected file, or not
	}{
		{"existing", func(t *testing.T, w string) {
			if err := os.WriteFile(filepath.Join(w, "f"), []byte("user's\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		// The placeholder is made by a call of the protecting grant,
		// opened by the other sandbox while it is in the tree, and locked
		// once it is back in the depot (or removed), so the next hold
		// waits on the depot's entry.
		{"placeholder", func(t *testing.T, w string) {}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := newDirs(t)
			b := pooledWith(t, 0, t.TempDir()) // with a depot on the tree's file system
			c.before(t, d.W)
			f := filepath.Join(d.W, "f")
			protecting := func(script string) *sandbox.Spec {
				return &sandbox.Spec{Mounts: []sandbox.Mount{{Source: d.W, Writable: true}}, ReadOnly: []string{f},
					Command: []string{"/bin/sh", "-c", script}}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// The protecting grant's first call makes the placeholder and
			// waits; the other sandbox opens it meanwhile.
			first := runAsync(t, ctx, b, protecting(": >"+d.W+"/first; while [ ! -e "+d.W+"/opened ]; do sleep 0.01; done"))
			waitMade(t, d.W+"/first", first)
			hostile := runAsync(t, ctx, b, &sandbox.Spec{Mounts: []sandbox.Mount{{Source: d.W, Writable: true}},
				Command: []string{"/bin/sh", "-c", "exec 9<" + f + " && : >" + d.W + "/opened && " +
					"while [ -e " + d.W + "/first ]; do sleep 0.01; done; flock -x 9 && : >" + d.W + "/locked && exec sleep 100000"}})
			waitMade(t, d.W+"/opened", hostile)
			if err := <-first; err != nil {
				t.Fatal(err)
			}
			os.Remove(d.W + "/first")
			waitMade(t, d.W+"/locked", hostile)

			second := runAsync(t, ctx, b, protecting("echo ok"))
			select {
			case err := <-second:
				// Refused or run, but answered.
				t.Logf("the protecting grant's call while the file is locked: %v", err)
			case <-time.After(30 * time.Second):
				cancel()
				<-hostile
				t.Fatal("a call of the protecting grant waited for another sandbox's lock on its protected path")
			}
			// And the backend's other calls are not held either.
			spec := &sandbox.Spec{Mounts: []sandbox.Mount{{Source: d.R}}, Command: []string{"/bin/sh", "-c", "echo free"}}
			if err := <-runAsync(t, ctx, b, spec); err != nil {
				t.Fatal(err)
			}
			cancel()
			<-hostile
		})
	}
}
