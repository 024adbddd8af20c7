//go:build unix

package tool

import (
	"io/fs"
	"os"
	"syscall"
)

// keepOwner gives f the owner and group of old where the caller may (root,
// or the owner keeping a group it belongs to); otherwise f keeps the
// caller's, as any newly made file would.
func keepOwner(f *os.File, old fs.FileInfo) {
	st, ok := old.Sys().(*syscall.Stat_t)
	if !ok {
		return
	}
	if fi, err := f.Stat(); err == nil {
		if cur, ok := fi.Sys().(*syscall.Stat_t); ok && cur.Uid == st.Uid && cur.Gid == st.Gid {
			return
		}
	}
	_ = f.Chown(int(st.Uid), int(st.Gid)) // best effort: EPERM leaves the caller's owner
}
