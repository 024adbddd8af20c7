//go:build linux || darwin

package broker

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/sandbox/diskguard"
)

// logRoom reports whether writing n more bytes to f leaves its file system
// above its floor of free space (diskguard.Floor), or its space cannot be
// read.
func logRoom(f *os.File, n int) bool {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return true
	}
	avail, size := int64(st.Bavail)*int64(st.Bsize), int64(st.Blocks)*int64(st.Bsize)
	return avail-int64(n) >= diskguard.Floor(size, 0)
}
