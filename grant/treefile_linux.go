package grant

import (
	"os"
	"strconv"
	"syscall"
)

// openTreeFile opens the regular file p for reading, following a symlink
// at p only where follow says so. It looks before it opens: an O_PATH
// open, which reads nothing and runs no device's or fifo's open, then
// fstat, and only a regular file is opened for reading, through
// /proc/self/fd (the very file looked at, whatever is renamed meanwhile),
// non-blocking and never as a controlling terminal. Anything else is
// errNotRegular.
func openTreeFile(p string, follow bool) (*os.File, error) {
	flags := oPath | syscall.O_CLOEXEC
	if !follow {
		flags |= syscall.O_NOFOLLOW
	}
	pfd, err := retryEINTR(func() (int, error) { return syscall.Open(p, flags, 0) })
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	defer syscall.Close(pfd)
	var st syscall.Stat_t
	if err := syscall.Fstat(pfd, &st); err != nil {
		return nil, &os.PathError{Op: "fstat", Path: p, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, &os.PathError{Op: "open", Path: p, Err: errNotRegular}
	}
	const read = syscall.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY | syscall.O_CLOEXEC
	fd, err := retryEINTR(func() (int, error) { return syscall.Open("/proc/self/fd/"+strconv.Itoa(pfd), read, 0) })
	if err != nil {
		// No /proc: open p itself, and keep it only if it is the file
		// looked at.
		nofollow := 0
		if !follow {
			nofollow = syscall.O_NOFOLLOW
		}
		if fd, err = retryEINTR(func() (int, error) { return syscall.Open(p, read|nofollow, 0) }); err != nil {
			return nil, &os.PathError{Op: "open", Path: p, Err: err}
		}
		var again syscall.Stat_t
		if err := syscall.Fstat(fd, &again); err != nil || again.Dev != st.Dev || again.Ino != st.Ino {
			syscall.Close(fd)
			return nil, &os.PathError{Op: "open", Path: p, Err: errNotRegular}
		}
	}
	return os.NewFile(uintptr(fd), p), nil
}
