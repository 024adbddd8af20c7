package wasm

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/wire"
)

// TestDiskFillIsStoppedByTheGuard is hostile case 13 for wasm tools and
// capsules: a module that writes file after file into its read-write
// directory, each within the file size limit, or makes empty file after
// empty file, is stopped before it fills the directory's file system or
// uses up its inodes, and the outcome names the disk limit, as the native
// sandbox and the Podman container stop a command (package diskguard).
// Before, a module's writes went to the host's disk through wazero with
// no guard at all: only the file size limit bounded each file, and a
// module filled the disk under its grant for as long as its time allowed.
func TestDiskFillIsStoppedByTheGuard(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.RequireFeature(t, "root, to mount a small file system for the module's directory")
	}
	m := probe(t)
	for _, c := range []struct{ name, n, size string }{
		{"space", "120", "1048576"},
		{"inodes", "19500", "0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := tempDir(t)
			// 96 MiB and 20,000 inodes: the guard keeps a quarter of each
			// free (diskguard.Floor, InodeFloor).
			if err := syscall.Mount(testenv.FSSource, dir, "tmpfs", 0, "size=96m,nr_inodes=20000"); err != nil {
				testenv.RequireFeature(t, "mounting a tmpfs: "+err.Error())
			}
			t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
			cfg := Config{Dirs: []Dir{{Host: dir, Guest: dir}}, FileSize: 8 << 20, Time: 2 * time.Minute}
			out, o := run(t, m, cfg, "fill", dir, c.n, c.size, "30s")
			if !o.Hit(wire.LimitDisk) {
				var st syscall.Statfs_t
				_ = syscall.Statfs(dir, &st)
				t.Errorf("the fill was not stopped: limits hit %v, exit %d, output %q; the file system has %d bytes and %d inodes free",
					o.LimitsHit, o.ExitCode, strings.TrimSpace(out), int64(st.Bavail)*st.Bsize, st.Ffree)
			}
			if o.Hit(wire.LimitTime) {
				t.Errorf("the run is reported as timed out too: %v", o.LimitsHit)
			}
		})
	}
}
