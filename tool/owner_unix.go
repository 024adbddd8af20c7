//go:build unix

package tool

import (
	"io/fs"
	"os"
	"syscall"
)

// keepOwner gives f the owner and group of old where the caller may (root,
// or the owner keeping a group it belongs to), and reports whether f now
// has them: where it has not, f has the caller's (or, in a setgid
// directory, the directory's group), as any newly made file would, and
// old's permission bits would be given to someone else.
func keepOwner(f *os.File, old fs.FileInfo) bool {
	st, ok := old.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	same := func() bool {
		fi, err := f.Stat()
		if err != nil {
			return false
		}
		cur, ok := fi.Sys().(*syscall.Stat_t)
		return ok && cur.Uid == st.Uid && cur.Gid == st.Gid
	}
	if same() {
		return true
	}
	_ = f.Chown(int(st.Uid), int(st.Gid)) // EPERM or EINVAL (an id outside the user namespace) leaves the caller's
	return same()
}

// sameOwner reports whether a and b have the same owner and group.
func sameOwner(a, b fs.FileInfo) bool {
	sa, ok := a.Sys().(*syscall.Stat_t)
	sb, okb := b.Sys().(*syscall.Stat_t)
	return !ok || !okb || sa.Uid == sb.Uid && sa.Gid == sb.Gid
}
