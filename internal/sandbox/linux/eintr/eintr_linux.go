package eintr

import (
	"errors"

	"golang.org/x/sys/unix"
)

// Retry calls fn until it returns an error other than EINTR, and returns
// that error (nil included).
func Retry(fn func() error) error {
	for {
		if err := fn(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// Value calls fn until its error is not EINTR, and returns its results.
func Value[T any](fn func() (T, error)) (T, error) {
	for {
		v, err := fn()
		if !errors.Is(err, unix.EINTR) {
			return v, err
		}
	}
}

// Openat2 is unix.Openat2 retried on EINTR, and on EAGAIN, which openat2
// returns when a concurrent rename or mount raced a lookup restricted by
// how.Resolve (RESOLVE_BENEATH, RESOLVE_NO_SYMLINKS...): the retry
// resolves the path again, with the same restrictions.
func Openat2(dirfd int, path string, how *unix.OpenHow) (int, error) {
	for {
		fd, err := unix.Openat2(dirfd, path, how)
		if !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EAGAIN) {
			return fd, err
		}
	}
}
