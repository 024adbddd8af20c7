package linux

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/sandbox/journal"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

// BenchmarkHold is the host's part of claiming a warm sandbox in a plain
// directory: making and locking the placeholders of every protected and
// denied path of the default grant, then releasing them; "made" with no
// state directory (each placeholder made and removed), "depot" with one on
// the tree's mount (each moved from and back to the depot).
func BenchmarkHold(b *testing.B) {
	for _, depot := range []bool{false, true} {
		b.Run(map[bool]string{false: "made", true: "depot"}[depot], func(b *testing.B) {
			dir := b.TempDir()
			g, err := grant.FromFlags(dir, grant.Flags{})
			if err != nil {
				b.Fatal(err)
			}
			cfg := &initproto.Config{Mounts: []initproto.Mount{{Source: dir, Target: dir, Writable: true}},
				Masks: g.Masks(), ReadOnly: g.Protected(), ReadOnlyDirs: g.ProtectedDirs()}
			var p placeholders
			if depot {
				p.depot = newDepot(b.TempDir())
			}
			defer p.closeDepot()
			b.ResetTimer()
			for range b.N {
				held, err := p.hold(cfg)
				if err != nil {
					b.Fatal(err)
				}
				p.release(held)
			}
			b.ReportMetric(float64(len(cfg.Placeholders)), "placeholders")
		})
	}
}

// The host makes a placeholder for a missing protected path in the tree
// the sandbox sees at its parent: not below a read-only grant nested in a
// writable one (the writable tree there is hidden, and the sandbox cannot
// create the name anyway), and not in the read-only grant itself.
func TestHoldUsesTheGrantHoldingTheParent(t *testing.T) {
	w, ro := t.TempDir(), t.TempDir() // w/ro, the mount point, is made by the init
	cfg := &initproto.Config{
		Mounts:   []initproto.Mount{{Source: w, Target: "/w", Writable: true}, {Source: ro, Target: "/w/ro"}},
		ReadOnly: []string{"/w/ro/.git/hooks", "/w/.vscode"},
	}
	var p placeholders
	held, err := p.hold(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.release(held)
	if want := []string{"/w/.vscode"}; !slices.Equal(cfg.Placeholders, want) {
		t.Errorf("placeholders %q, want %q", cfg.Placeholders, want)
	}
	for _, hidden := range []string{filepath.Join(w, "ro"), filepath.Join(ro, ".git")} {
		if _, err := os.Lstat(hidden); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v, want no placeholder", hidden, err)
		}
	}
}

// TestHoldDuringRelease: a claim's hold while another call's release is
// removing its placeholders does not wait for the release: it takes back,
// as they are, those not removed yet, and makes the rest anew. Every
// placeholder exists while a call holds it and none once both are done.
func TestHoldDuringRelease(t *testing.T) {
	dir := t.TempDir()
	g, err := grant.FromFlags(dir, grant.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &initproto.Config{Mounts: []initproto.Mount{{Source: dir, Target: dir, Writable: true}},
		Masks: g.Masks(), ReadOnly: g.Protected(), ReadOnlyDirs: g.ProtectedDirs()}
	var p placeholders
	first, err := p.hold(cfg)
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]*heldDir{}
	for _, h := range first {
		before[h] = p.refs[h]
	}
	removed, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	afterRemove = func() { once.Do(func() { close(removed); <-resume }) }
	defer func() { afterRemove = nil }()
	done := make(chan struct{})
	go func() { p.release(first); close(done) }()
	<-removed // one placeholder is gone; the release is paused
	second, err := p.hold(cfg)
	if err != nil {
		t.Fatal(err)
	}
	close(resume)
	<-done
	kept := 0
	for _, h := range second {
		var st unix.Stat_t
		if err := unix.Lstat(h, &st); err != nil {
			t.Errorf("placeholder %s missing while a call holds it: %v", h, err)
		}
		if p.refs[h] == before[h] {
			kept++ // the same open, locked placeholder: taken back
		}
	}
	if len(second) != len(first) || kept != len(first)-1 {
		t.Errorf("the second hold has %d placeholders, %d taken back from the paused release; want %d and %d", len(second), kept, len(first), len(first)-1)
	}
	p.release(second)
	for _, h := range second {
		if _, err := os.Lstat(h); !os.IsNotExist(err) {
			t.Errorf("placeholder %s left after every release: %v", h, err)
		}
	}
}

// TestHoldTwoSetsOfOneProcess: two backends of one process (the Go API
// allows as many as a program wants) hold the same missing protected
// paths at once, again and again. Each set of placeholders makes them
// under temporary names of its own: with the process's alone, one set's
// move into place or removal of a leftover took the other's temporary
// file or directory from under it, and a call failed ("creating a
// placeholder: no such file or directory", TestPlaceholdersAcrossBrokers
// 1 in ~50). Nothing is left in the tree afterwards.
func TestHoldTwoSetsOfOneProcess(t *testing.T) {
	dir := t.TempDir()
	cfg := func() *initproto.Config {
		return &initproto.Config{Mounts: []initproto.Mount{{Source: dir, Target: "/w", Writable: true}},
			ReadOnly: []string{"/w/.bashrc", "/w/.git", "/w/.git/hooks", "/w/.vscode"}, ReadOnlyDirs: []string{"/w/.git", "/w/.git/hooks", "/w/.vscode"}}
	}
	var sets [2]placeholders
	if _, err := sets[0].hold(&initproto.Config{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sets[1].hold(&initproto.Config{}); err != nil {
		t.Fatal(err)
	}
	if a, b := sets[0].tempName(".bashrc"), sets[1].tempName(".bashrc"); a == b {
		t.Fatalf("two sets of one process make .bashrc under the same temporary name %q", a)
	}
	var wg sync.WaitGroup
	for i := range sets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 300 {
				c := cfg()
				held, err := sets[i].hold(c)
				if err != nil {
					t.Errorf("set %d: %v", i, err)
					return
				}
				sets[i].release(held)
			}
		}()
	}
	wg.Wait()
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("left in the tree: %s", e.Name())
	}
}

// TestJournalTwoSetsOfOneProcess: two backends of one process over one
// state directory share its journal file (it is named by the process).
// One set's release, holding nothing any more, emptied the file while
// the other still held placeholders: a kill -9 then left those in the
// user's tree, and the next sweep, reading an empty journal, kept them.
// Here the other set's process "dies" (its locks dropped) after the first
// set's release, and the sweep of the journal removes all it made.
func TestJournalTwoSetsOfOneProcess(t *testing.T) {
	journals := t.TempDir()
	var a, b placeholders
	a.journalDir, b.journalDir = journals, journals
	cfg := func(dir string) *initproto.Config {
		return &initproto.Config{Mounts: []initproto.Mount{{Source: dir, Target: "/w", Writable: true}},
			ReadOnly: []string{"/w/.bashrc", "/w/.vscode"}, ReadOnlyDirs: []string{"/w/.vscode"}}
	}
	dirA, dirB := t.TempDir(), t.TempDir()
	heldB, err := b.hold(cfg(dirB))
	if err != nil || len(heldB) != 2 {
		t.Fatalf("set b: held %q, %v", heldB, err)
	}
	heldA, err := a.hold(cfg(dirA))
	if err != nil {
		t.Fatal(err)
	}
	a.release(heldA)
	// b's process dies: its descriptors, and so its locks, are gone.
	b.mu.Lock()
	for _, h := range b.refs {
		unix.Close(h.fd)
	}
	b.refs = nil
	b.journal.Close()
	b.mu.Unlock()
	if _, err := removeJournalled(filepath.Join(journals, journal.Name())); err != nil {
		t.Fatal(err)
	}
	left, err := os.ReadDir(dirB)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("left in the tree of the set that died, after the sweep: %s", e.Name())
	}
}
