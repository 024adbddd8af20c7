// Package regularfile opens and reads files a flag, a grant or the records
// directory names, refusing anything that is not a regular file without
// waiting on it: a FIFO with no writer would block the open or the read
// for good, a device (/dev/zero) would never end, and opening some devices
// acts (a tape rewinds, a terminal becomes the controlling one).
package regularfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrTooLarge is wrapped by Read's error for a file past its bound.
var ErrTooLarge = errors.New("file too large")

// Open opens path for reading if it is a regular file. It is judged once
// before it is opened (with follow, through symlinks, as a Kubernetes
// secret's mount is one; without, a symlink is refused) and again on what
// was opened, which may have been put in its place meanwhile. A directory
// is refused as reading one is (EISDIR).
func Open(path string, follow bool) (*os.File, error) {
	stat := os.Lstat
	if follow {
		stat = os.Stat
	}
	// A path that cannot be judged yet (gone) gets the open's own error.
	if fi, err := stat(path); err == nil {
		if err := check(path, fi); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = check(path, fi)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Read reads path (Open) when it holds at most max bytes; past that its
// error wraps ErrTooLarge. No more than max+1 bytes are ever held.
func Read(path string, max int64, follow bool) ([]byte, error) {
	f, err := Open(path, follow)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		return nil, fmt.Errorf("%s holds more than %d bytes: %w", path, max, ErrTooLarge)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s holds more than %d bytes: %w", path, max, ErrTooLarge)
	}
	return b, nil
}

func check(path string, fi fs.FileInfo) error {
	switch {
	case fi.IsDir():
		return &fs.PathError{Op: "read", Path: path, Err: syscall.EISDIR}
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	return nil
}
