package linux

import (
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

// TestPlaceholderNeverUnmarked: a placeholder's own name never shows an
// unmarked placeholder, not even for an instant, so a broker killed while
// it makes them (kill -9 mid-claim) leaves nothing a sweep would take for
// the user's own file. A watcher opens the names as fast as it can while
// the host makes and removes the placeholders of the default grant.
func TestPlaceholderNeverUnmarked(t *testing.T) {
	dir := t.TempDir()
	probe := filepath.Join(dir, "probe")
	if err := os.WriteFile(probe, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(probe, placeholderXattr, []byte("1"), 0); err != nil {
		t.Skipf("no user extended attributes here (%v): placeholders are unmarked by design", err)
	}
	os.Remove(probe)
	g, err := grant.FromFlags(dir, grant.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &initproto.Config{Mounts: []initproto.Mount{{Source: dir, Target: dir, Writable: true}},
		Masks: g.Masks(), ReadOnly: g.Protected(), ReadOnlyDirs: g.ProtectedDirs()}
	names := []string{".bashrc", ".envrc", ".vscode", ".profile", ".idea"}
	var stop atomic.Bool
	var unmarked atomic.Int64
	var seen atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			for _, n := range names {
				f, err := os.OpenFile(filepath.Join(dir, n), os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
				if err != nil {
					continue
				}
				seen.Add(1)
				if !marked(f) {
					unmarked.Add(1)
				}
				f.Close()
			}
		}
	}()
	var p placeholders
	for range 100 {
		held, err := p.hold(cfg)
		if err != nil {
			stop.Store(true)
			wg.Wait()
			t.Fatal(err)
		}
		p.release(held)
	}
	stop.Store(true)
	wg.Wait()
	if seen.Load() == 0 {
		t.Fatal("the watcher never saw a placeholder: the test proves nothing")
	}
	if n := unmarked.Load(); n > 0 {
		t.Fatalf("%d of %d sightings were of a placeholder at its own name without its mark", n, seen.Load())
	}
}

// TestSweepRemovesTemporaryNames: a dead process's journal names the
// temporary name a placeholder is made under; the sweep removes an empty
// file or directory there, marked or not, and keeps an unmarked empty file
// at an ordinary journalled name (it may be the user's).
func TestSweepRemovesTemporaryNames(t *testing.T) {
	tree, journals := t.TempDir(), t.TempDir()
	tmpFile := filepath.Join(tree, tempPrefix+"1-2-.bashrc")
	tmpDir := filepath.Join(tree, tempPrefix+"1-2-.vscode")
	users := filepath.Join(tree, ".envrc")
	if err := os.WriteFile(tmpFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(tmpDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(users, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// pid 1's start time is never 1: a journal of a process that is gone.
	if err := os.WriteFile(filepath.Join(journals, "1-1"), []byte(tmpFile+"\n"+tmpDir+"\n"+users+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sweepJournals(journals, slog.New(slog.DiscardHandler))
	for _, p := range []string{tmpFile, tmpDir} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s: a temporary placeholder name a dead process journalled was left", p)
		}
	}
	if _, err := os.Lstat(users); err != nil {
		t.Errorf("%s: an unmarked file at an ordinary name was removed: %v", users, err)
	}
}
