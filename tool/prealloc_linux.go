package tool

import (
	"errors"
	"os"
	"syscall"
)

// fallocKeepSize is FALLOC_FL_KEEP_SIZE: reserve blocks without changing the size.
const fallocKeepSize = 0x01

// preallocate reserves n bytes for f without changing its size or content,
// so a write that cannot fit fails (ENOSPC, EDQUOT) before any byte changes.
// A file system that cannot reserve space is not an error.
func preallocate(f *os.File, n int64) error {
	if n == 0 {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Fallocate(int(fd), fallocKeepSize, 0, n)
			if !errors.Is(ferr, syscall.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	switch {
	case errors.Is(ferr, syscall.EOPNOTSUPP), errors.Is(ferr, syscall.ENOSYS), errors.Is(ferr, syscall.EINVAL):
		return nil
	case ferr != nil:
		return os.NewSyscallError("fallocate", ferr)
	}
	return nil
}
