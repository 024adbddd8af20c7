package grant

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
)

// mountAt mounts a new file system of type typ on dir, unmounted when the
// test ends; it skips the test where that cannot be done (not root).
func mountAt(t *testing.T, typ, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a file system needs root")
	}
	if err := syscall.Mount(typ, dir, typ, 0, ""); err != nil {
		t.Skipf("mounting %s on %s: %v", typ, dir, err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
}

// TestKernelFileSystemMountsRefused: a granted tree is mounted with
// everything mounted inside it, so a procfs (a build chroot's
// /srv/chroot/proc) or sysfs below a granted directory gave the sandbox
// the host's process table (every process's command line) and the
// kernel's settings, wherever the mount lies: only /proc, /sys and /dev
// themselves were refused. A grant that is, lies in or holds a mount of
// a kernel file system is refused, naming the mount and its type; an
// ordinary file system mounted inside (a tmpfs) is fine.
func TestKernelFileSystemMountsRefused(t *testing.T) {
	T := fixture(t, "chroot/proc/", "chroot/sys/", "chroot/etc/passwd", "plain/data/")
	mountAt(t, "proc", T+"/chroot/proc")
	mountAt(t, "sysfs", T+"/chroot/sys")
	mountAt(t, "tmpfs", T+"/plain/data")
	for _, c := range []struct{ path, mount, typ string }{
		{"chroot", T + "/chroot/proc", "proc"},
		{"chroot/proc", T + "/chroot/proc", "proc"},
		{"chroot/proc/self", T + "/chroot/proc", "proc"},
		{"chroot/proc/sys/kernel", T + "/chroot/proc", "proc"},
		{"chroot/sys", T + "/chroot/sys", "sysfs"},
		{"chroot/sys/kernel", T + "/chroot/sys", "sysfs"},
	} {
		for _, key := range []string{"read_only", "read_write"} {
			_, err := Parse([]byte(fmt.Sprintf("[paths]\n%s = [%q]\n", key, c.path)), "grant.toml", T)
			if err == nil {
				t.Errorf("%s %q: granted, with the %s mounted at %s in it", key, c.path, c.typ, c.mount)
				continue
			}
			if msg := err.Error(); !strings.Contains(msg, c.mount) || !strings.Contains(msg, c.typ) {
				t.Errorf("%s %q: err %q, want it to name the %s mount at %s", key, c.path, msg, c.typ, c.mount)
			}
		}
	}
	mustParse(t, T, "[paths]\nread_write = [\"plain\"]\nread_only = [\"chroot/etc\"]\n")
}
