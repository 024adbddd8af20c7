package tool

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// errNoLink: an unnamed file cannot be given a name here (no /proc, and no
// CAP_DAC_READ_SEARCH for AT_EMPTY_PATH).
var errNoLink = errors.New("an unnamed file cannot be linked here")

// openUnnamed makes an empty file with no name in the directory d
// (O_TMPFILE), for a file replacing base: the kernel frees it if the
// process dies before linkUnnamed names it. A file system without
// O_TMPFILE (NFS, FUSE, an old kernel) is an error.
func openUnnamed(d *os.File, base string, perm os.FileMode) (*os.File, error) {
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = unix.Openat(int(d.Fd()), ".", unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, uint32(perm))
		return err
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: base, Err: err}
	}
	// A kernel older than O_TMPFILE would have opened the directory.
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: base, Err: unix.EOPNOTSUPP}
	}
	return os.NewFile(uintptr(fd), base), nil
}

// linkUnnamed gives the unnamed file f the name name in its directory d,
// failing with fs.ErrExist if the name is taken (linkat never replaces).
// linkat(AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH; any other caller links
// through /proc/self/fd, and errNoLink says neither works.
func linkUnnamed(f, d *os.File, name string) error {
	fd, dfd := int(f.Fd()), int(d.Fd())
	err := retryEINTR(func() error { return unix.Linkat(fd, "", dfd, name, unix.AT_EMPTY_PATH) })
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL) {
		err = retryEINTR(func() error {
			return unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), dfd, name, unix.AT_SYMLINK_FOLLOW)
		})
		if errors.Is(err, unix.ENOENT) && !procFD(fd) {
			return errNoLink
		}
	}
	if err != nil {
		return &os.LinkError{Op: "link", Old: f.Name(), New: name, Err: err}
	}
	return nil
}

// procFD reports whether /proc/self/fd shows fd (/proc is mounted).
func procFD(fd int) bool {
	_, err := os.Lstat("/proc/self/fd/" + strconv.Itoa(fd))
	return err == nil
}

func retryEINTR(fn func() error) error {
	for {
		if err := fn(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
