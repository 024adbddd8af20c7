package testenv

import (
	"os"
	"syscall"
	"testing"
)

// MountFS mounts a new file system of type typ (tmpfs, ramfs: types that
// need no device) on a new temporary directory and returns it, unmounted
// when the test ends. It skips the test where that cannot be done (not
// root).
func MountFS(t testing.TB, typ string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a file system needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount(typ, dir, typ, 0, ""); err != nil {
		t.Skipf("mounting %s: %v", typ, err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}
