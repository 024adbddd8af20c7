package direct

import (
	"os"

	"golang.org/x/sys/unix"
)

// unread is the number of bytes the pipe f holds unread; ok is false when
// that cannot be read.
func unread(f *os.File) (n int, ok bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, false
	}
	var ierr error
	if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); err != nil || ierr != nil {
		return 0, false
	}
	return n, true
}
