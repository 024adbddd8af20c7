package diskguard

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/testenv"
)

// What is written between Open and Watch counts: the watch sees it at
// once, without waiting for its first tick, and a guard whose file system
// did not lose space calls nothing.
func TestWatchCountsFromOpen(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small file system (CI runs as root)")
	}
	dir := t.TempDir()
	if err := unix.Mount(testenv.FSSource, dir, "tmpfs", 0, "size=16m"); err != nil {
		t.Skipf("mounting a tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })

	idle := Open([]string{dir}, 64<<20) // the floor is above the whole file system
	if idle == nil {
		t.Fatal("Open guarded nothing")
	}
	killed := make(chan struct{}, 2)
	stop := idle.Watch(func() { killed <- struct{}{} })
	stop()
	stop() // twice: nothing more
	if len(killed) != 0 {
		t.Fatal("a file system below its floor that lost nothing since Open was reported")
	}

	g := Open([]string{dir, dir}, 64<<20)
	if len(g.fss) != 1 {
		t.Errorf("one file system, %d guarded", len(g.fss))
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	stop = g.Watch(func() { killed <- struct{}{} })
	<-killed
	stop()
}

// A file system mounted beneath a guarded source is written through it
// (a sandbox's grant is a recursive bind), so it is guarded too; one
// mounted read-only is not.
func TestOpenGuardsMountsBeneath(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small file system (CI runs as root)")
	}
	dir := t.TempDir()
	sub := filepath.Join(dir, "a b", "sub")
	ro := filepath.Join(dir, "ro")
	for _, d := range []string{sub, ro} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mount(testenv.FSSource, sub, "tmpfs", 0, "size=16m"); err != nil {
		t.Skipf("mounting a tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(sub, unix.MNT_DETACH) })
	if err := unix.Mount(testenv.FSSource, ro, "tmpfs", unix.MS_RDONLY, "size=16m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(ro, unix.MNT_DETACH) })

	if got := mountsBeneath([]string{dir + "/"}); len(got) != 1 || got[0] != sub {
		t.Errorf("mountsBeneath(%s) = %q, want [%s] (the read-write one, its name unescaped)", dir, got, sub)
	}
	g := Open([]string{dir}, 64<<20)
	defer g.Close()
	if err := os.WriteFile(filepath.Join(sub, "f"), make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	killed := make(chan struct{}, 1)
	stop := g.Watch(func() { killed <- struct{}{} })
	<-killed
	stop()
}
