//go:build unix

package broker

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// fileOwner returns the uid that owns the file fi describes.
func fileOwner(fi os.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// writableDir reports whether this process may make entries in dir.
func writableDir(dir string) bool { return unix.Access(dir, unix.W_OK) == nil }
