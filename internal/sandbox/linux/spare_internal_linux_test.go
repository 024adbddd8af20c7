package linux

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
	"github.com/airlockhq/airlock/internal/testenv"
)

// plainConfig is the config of the default grant over a fresh, empty
// directory: every protected name missing.
func plainConfig(t *testing.T) (string, *initproto.Config) {
	t.Helper()
	dir := t.TempDir()
	g, err := grant.FromFlags(dir, grant.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	return dir, &initproto.Config{Mounts: []initproto.Mount{{Source: dir, Target: dir, Writable: true}},
		Masks: g.Masks(), ReadOnly: g.Protected(), ReadOnlyDirs: g.ProtectedDirs()}
}

// names lists dir's entries.
func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// spareCount is how many spares p keeps.
func (p *placeholders) spareCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, s := range p.spares {
		n += len(s.fds)
	}
	return n
}

// filePlaceholders counts cfg's paths a hold makes as empty files.
func filePlaceholders(cfg *initproto.Config) int {
	n := 0
	eachFilePlaceholder(cfg, func(initproto.Mount, []string) { n++ })
	return n
}

// TestSparesMadeAheadLeaveNoTrace: prepare makes one unnamed inode per
// file placeholder, nothing shows in the tree; the hold then gives each
// its name, as a marked, share-locked placeholder with its own inode, and
// the release leaves the tree empty again.
func TestSparesMadeAheadLeaveNoTrace(t *testing.T) {
	for _, way := range []linkWay{linkEmptyPath, linkProc} {
		t.Run(map[linkWay]string{linkEmptyPath: "empty-path", linkProc: "proc"}[way], func(t *testing.T) {
			dir, cfg := plainConfig(t)
			var p placeholders
			defer p.closeSpares()
			p.linkWay = way
			p.prepare(cfg)
			want := filePlaceholders(cfg)
			if want < 20 {
				t.Fatalf("the default grant has %d file placeholders in a plain directory, want the table's ~27", want)
			}
			if n := p.spareCount(); n != spareSets*want {
				t.Fatalf("%d spares, want %d", n, spareSets*want)
			}
			if got := names(t, dir); len(got) != 0 {
				t.Fatalf("the tree holds %v while only spares exist, want nothing", got)
			}
			p.prepare(cfg) // a second build of the same shape adds none
			if n := p.spareCount(); n != spareSets*want {
				t.Fatalf("%d spares after a second prepare, want %d", n, spareSets*want)
			}
			held, n, err := p.holdCounting(cfg)
			linked := n.spares
			if err != nil {
				t.Fatal(err)
			}
			if left := (spareSets - 1) * want; linked != want || p.spareCount() != left || p.linkWay != way {
				t.Fatalf("linked %d of %d spares, %d left (want %d), way %d (want %d)", linked, want, p.spareCount(), left, p.linkWay, way)
			}
			inodes := map[uint64]bool{}
			eachFilePlaceholder(cfg, func(m initproto.Mount, rel []string) {
				path := filepath.Join(m.Source, filepath.Join(rel...))
				var st unix.Stat_t
				if err := unix.Lstat(path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != 0 || st.Nlink != 1 {
					t.Errorf("%s: %v, mode %o size %d links %d, want an empty file of one name", path, err, st.Mode, st.Size, st.Nlink)
				}
				inodes[st.Ino] = true
				f, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if !marked(f) {
					t.Errorf("%s is not marked as a placeholder", path)
				}
				// Another airlock process cannot take it to remove it.
				if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err == nil {
					t.Errorf("%s: an exclusive lock was free while the hold holds it", path)
				}
			})
			if len(inodes) != want {
				t.Errorf("%d inodes for %d file placeholders, want one each", len(inodes), want)
			}
			p.release(held)
			if got := names(t, dir); len(got) != 0 {
				t.Fatalf("the tree holds %v after the release, want nothing", got)
			}
		})
	}
}

// TestSpareNeverTakesAName: a name the user made after the spares were
// made stays the user's (the spare is kept for another time), and a hold
// where no spare can be linked makes its placeholders by name.
func TestSpareNeverTakesAName(t *testing.T) {
	dir, cfg := plainConfig(t)
	var p placeholders
	defer p.closeSpares()
	p.prepare(cfg)
	want := filePlaceholders(cfg)
	rc := filepath.Join(dir, ".bashrc")
	if err := os.WriteFile(rc, []byte("user's own\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	held, n, err := p.holdCounting(cfg)
	linked := n.spares
	if err != nil {
		t.Fatal(err)
	}
	if left := (spareSets-1)*want + 1; linked != want-1 || p.spareCount() != left {
		t.Errorf("linked %d, %d spares left; want %d and %d", linked, p.spareCount(), want-1, left)
	}
	if b, err := os.ReadFile(rc); err != nil || string(b) != "user's own\n" {
		t.Errorf(".bashrc: %q %v, want the user's", b, err)
	}
	if slices.Contains(cfg.Placeholders, rc) {
		t.Errorf("the user's .bashrc is listed as a placeholder")
	}
	p.release(held)
	if got := names(t, dir); !slices.Equal(got, []string{".bashrc"}) {
		t.Fatalf("the tree holds %v after the release, want only the user's .bashrc", got)
	}

	// Where no way of linking works, the hold makes them by name.
	p.linkWay = linkNone
	os.Remove(rc)
	held, n, err = p.holdCounting(cfg)
	linked = n.spares
	if err != nil {
		t.Fatal(err)
	}
	if linked != 0 || len(cfg.Placeholders) < want {
		t.Errorf("linked %d with linking off, %d placeholders; want 0 and at least %d", linked, len(cfg.Placeholders), want)
	}
	for _, ph := range cfg.Placeholders {
		if _, err := os.Lstat(ph); err != nil {
			t.Errorf("placeholder %s: %v", ph, err)
		}
	}
	p.release(held)
	if got := names(t, dir); len(got) != 0 {
		t.Fatalf("the tree holds %v after the release, want nothing", got)
	}
}

// TestSparesClosed: closing the spares frees their inodes (no descriptor
// of this process is left on an unnamed file) and no more are made.
func TestSparesClosed(t *testing.T) {
	dir, cfg := plainConfig(t)
	var p placeholders
	p.prepare(cfg)
	if n := sparesIn(t, dir); n == 0 || n != p.spareCount() {
		t.Fatalf("%d descriptors on unnamed files of the tree for %d spares", n, p.spareCount())
	}
	p.closeSpares()
	if n := sparesIn(t, dir); n != 0 {
		t.Errorf("%d descriptors still open on unnamed files of the tree", n)
	}
	p.prepare(cfg)
	if n := p.spareCount(); n != 0 {
		t.Errorf("%d spares made after closeSpares", n)
	}
}

// sparesIn counts this process's descriptors on unnamed files of the
// directory dir: spares, which /proc shows as "DIR/#INODE (deleted)".
func sparesIn(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && filepath.Dir(l) == dir {
			n++
		}
	}
	return n
}

// TestSparesFreedWithThePool: the spares made for a pool's claims go
// when no warm sandbox is left to claim them: when the pool is released,
// and when another grant's shapes replace the old grant's. They are
// descriptors on the user's tree, and they kept its file system busy: a
// session's tree on a file system of its own (here a tmpfs) could not be
// unmounted after the session had released the pool.
func TestSparesFreedWithThePool(t *testing.T) {
	b, err := New(&Options{Executable: os.Args[0], Cgroups: CgroupsOptional})
	if err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	defer b.Close()
	tree := func() (string, *sandbox.Spec) {
		dir := t.TempDir()
		return dir, &sandbox.Spec{Mounts: []sandbox.Mount{{Source: dir, Writable: true}}, Cwd: dir, Env: []string{"PATH=/usr/bin:/bin"},
			ReadOnly: []string{filepath.Join(dir, ".bashrc"), filepath.Join(dir, ".mcp.json")}, Limits: sandbox.Limits{AllowUnenforced: true}}
	}
	warmUp := func(spec *sandbox.Spec) {
		t.Helper()
		if err := b.Prewarm(spec); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(20 * time.Second); b.Warm(spec) < 1; {
			if time.Now().After(deadline) {
				t.Fatal("no warm sandbox after 20 s")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	dir, spec := tree()
	mounted := false
	if os.Geteuid() == 0 {
		if err := unix.Mount(testenv.FSSource, dir, "tmpfs", 0, "size=1m"); err != nil {
			t.Fatalf("mounting a tmpfs for the tree: %v", err)
		}
		mounted = true
		defer func() {
			if mounted {
				_ = unix.Unmount(dir, unix.MNT_DETACH)
			}
		}()
	}

	release := b.Pool(1)
	warmUp(spec)
	if n := sparesIn(t, dir); n == 0 {
		t.Fatal("no spares made for the warm sandbox's claim")
	}
	release()
	if n := sparesIn(t, dir); n != 0 || b.placeholders.spareCount() != 0 {
		t.Errorf("the pool released, %d spares left open on the tree (%d kept), want none", n, b.placeholders.spareCount())
	}
	if mounted {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("the tree's file system cannot be unmounted once the pool is released: %v", err)
		} else {
			mounted = false
		}
	}

	// Another grant (another tree) replaces the shapes of the first.
	release = b.Pool(1)
	defer release()
	dirA, specA := tree()
	dirB, specB := tree()
	warmUp(specA)
	if sparesIn(t, dirA) == 0 {
		t.Fatal("no spares made for the first grant's claim")
	}
	warmUp(specB)
	if n := sparesIn(t, dirA); n != 0 {
		t.Errorf("%d spares left open on the tree of a grant the pool no longer keeps, want none", n)
	}
	if sparesIn(t, dirB) == 0 {
		t.Error("no spares made for the second grant's claim")
	}
}

// TestSpareSurvivesAFullDisk: a link that fails for want of room (a
// full disk, a quota) makes that placeholder by name, as without spares,
// but does not turn the spares off: the next hold links them again.
func TestSpareSurvivesAFullDisk(t *testing.T) {
	_, cfg := plainConfig(t)
	var p placeholders
	defer p.closeSpares()
	p.prepare(cfg)
	want := filePlaceholders(cfg)
	linkFault = func(string) error { return unix.ENOSPC }
	held, n, err := p.holdCounting(cfg)
	linked := n.spares
	linkFault = nil
	if err != nil {
		t.Fatal(err)
	}
	p.release(held)
	if linked != 0 || p.linkWay == linkNone || p.spareCount() != spareSets*want {
		t.Fatalf("with no room to link: %d linked, link way %d, %d spares; want none linked and all %d kept", linked, p.linkWay, p.spareCount(), spareSets*want)
	}
	held, n, err = p.holdCounting(cfg)
	linked = n.spares
	if err != nil {
		t.Fatal(err)
	}
	defer p.release(held)
	if linked != want {
		t.Errorf("%d spares linked once there was room again, want %d", linked, want)
	}
}
