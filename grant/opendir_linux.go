package grant

import (
	"os"
	"syscall"
)

// openDir opens the directory p for listing without following a symlink
// at its end and without waiting: a name swapped for a symlink, a FIFO or
// a device since it was listed (by a sandbox whose grant can write the
// tree) fails at once (ELOOP, ENOTDIR) instead of being followed or
// blocking the grant's build.
func openDir(p string) (*os.File, error) {
	fd, err := retryEINTR(func() (int, error) {
		return syscall.Open(p, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}
