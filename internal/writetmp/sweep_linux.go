package writetmp

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Sweep removes from the directory dir (a host path) every temporary file
// of the call with tag that is still there: a regular file whose name
// Matches the tag. No symlink is followed, to dir or in it, and nothing
// else is touched. It returns how many it removed.
func Sweep(dir, tag string) (int, error) {
	if !validTag(tag) || !filepath.IsAbs(dir) {
		return 0, nil
	}
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Openat2(unix.AT_FDCWD, dir, &unix.OpenHow{
			Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_NO_SYMLINKS,
		})
		return err
	})
	if errors.Is(err, unix.ENOSYS) { // before Linux 5.6: the last name at least
		err = retry(func() (err error) {
			fd, err = unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			return err
		})
	}
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return 0, nil
	}
	if err != nil {
		return 0, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	d := os.NewFile(uintptr(fd), dir)
	defer d.Close()
	n := 0
	var errs []error
	// The directory is read a batch of names at a time: it is in a
	// granted tree, which a sandbox may have filled with millions of long
	// names, and the broker holds no more of them at once than a batch.
	for {
		names, err := d.Readdirnames(sweepBatch)
		for _, name := range names {
			if !Matches(name, tag) {
				continue
			}
			var st unix.Stat_t
			if err := retry(func() error { return unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
				continue
			}
			if err := retry(func() error { return unix.Unlinkat(fd, name, 0) }); err != nil {
				if !errors.Is(err, unix.ENOENT) {
					errs = append(errs, &os.PathError{Op: "unlink", Path: filepath.Join(dir, name), Err: err})
				}
				continue
			}
			n++
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, errors.Join(append(errs, fmt.Errorf("listing %s: %w", dir, err))...)
		}
	}
	return n, errors.Join(errs...)
}

// sweepBatch is how many names Sweep reads of a directory at once.
const sweepBatch = 1024

// retry runs fn again while a signal interrupts it (EINTR). (The package
// is imported by the runner, which may import x/sys but not the sandbox's
// eintr package.)
func retry(fn func() error) error {
	for {
		if err := fn(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
