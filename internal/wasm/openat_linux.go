package wasm

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"golang.org/x/sys/unix"
)

// openForWrite opens p for writing through a descriptor of its parent
// directory, after checking where that directory really is: the deny and
// protected rules are applied before anything is created or truncated, and
// nothing can be swapped between the check and the open (the parent is
// held open; the last component is opened without following a symlink).
// handled is false when p's last component is a symlink, which the caller
// opens the ordinary way.
func (f *rootFS) openForWrite(p string, flag int, perm fs.FileMode) (file *os.File, e experimentalsys.Errno, handled bool) {
	dir, base := path.Split(p)
	if base == "" || base == "." || base == ".." {
		return nil, 0, false
	}
	d, err := f.root.OpenFile(clean(dir), os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, errno(err), true
	}
	defer d.Close()
	real, ok := openedPath(d)
	if !ok {
		return nil, 0, false
	}
	x, err := filepath.Rel(f.dir, real)
	if err != nil || x == ".." || strings.HasPrefix(x, ".."+string(filepath.Separator)) {
		return nil, experimentalsys.EPERM, true
	}
	full := clean(filepath.ToSlash(x) + "/" + base)
	if under(full, f.deny) {
		return nil, experimentalsys.ENOENT, true
	}
	if under(full, f.protected) {
		return nil, experimentalsys.EACCES, true
	}
	fd, err := unix.Openat(int(d.Fd()), base, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if errors.Is(err, unix.ELOOP) {
		return nil, 0, false
	}
	if err != nil {
		return nil, errno(err), true
	}
	return os.NewFile(uintptr(fd), filepath.Join(real, base)), 0, true
}

// parent opens the directory holding p (following symlinks inside the
// root) and returns it with p's last component, after checking the deny
// and protected rules on where that entry really is. ok is false when the
// platform cannot say where the directory is.
func (f *rootFS) parent(p string, moves bool) (d *os.File, base string, e experimentalsys.Errno, ok bool) {
	p = strings.TrimRight(p, "/")
	dir, base := path.Split(p)
	if base == "" || base == "." || base == ".." {
		return nil, "", experimentalsys.EINVAL, true
	}
	d, err := f.root.OpenFile(clean(dir), os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, "", errno(err), true
	}
	real, known := openedPath(d)
	if !known {
		d.Close()
		return nil, "", 0, false
	}
	x, err := filepath.Rel(f.dir, real)
	if err != nil || x == ".." || strings.HasPrefix(x, ".."+string(filepath.Separator)) {
		d.Close()
		return nil, "", experimentalsys.EPERM, true
	}
	full := clean(filepath.ToSlash(x) + "/" + base)
	switch {
	case under(full, f.deny):
		e = experimentalsys.ENOENT
	case under(full, f.protected):
		e = experimentalsys.EACCES
	case moves && f.holds(full):
		e = experimentalsys.EACCES
	}
	if e != 0 {
		d.Close()
		return nil, "", e, true
	}
	return d, base, 0, true
}

// entryOp runs op on p's entry in its parent directory, held open and
// checked (see parent), so that nothing can be swapped between the check
// and the change. handled is false where the platform cannot say where a
// directory is; the caller then works through the root by name.
func (f *rootFS) entryOp(p string, moves bool, op func(dirfd int, base string) error) (experimentalsys.Errno, bool) {
	d, base, e, ok := f.parent(p, moves)
	if !ok || e != 0 {
		return e, ok
	}
	defer d.Close()
	return errno(op(int(d.Fd()), base)), true
}

// entryOp2 is entryOp for operations on two entries (rename, link).
func (f *rootFS) entryOp2(from, to string, op func(fromfd int, fromBase string, tofd int, toBase string) error) (experimentalsys.Errno, bool) {
	d1, b1, e, ok := f.parent(from, true)
	if !ok || e != 0 {
		return e, ok
	}
	defer d1.Close()
	d2, b2, e, ok := f.parent(to, true)
	if !ok || e != 0 {
		return e, ok
	}
	defer d2.Close()
	return errno(op(int(d1.Fd()), b1, int(d2.Fd()), b2)), true
}

func (f *rootFS) mkdirAt(p string, perm fs.FileMode) (experimentalsys.Errno, bool) {
	return f.entryOp(p, false, func(fd int, base string) error { return unix.Mkdirat(fd, base, uint32(perm.Perm())) })
}

func (f *rootFS) removeAt(p string, dir bool) (experimentalsys.Errno, bool) {
	flags := 0
	if dir {
		flags = unix.AT_REMOVEDIR
	}
	return f.entryOp(p, true, func(fd int, base string) error { return unix.Unlinkat(fd, base, flags) })
}

func (f *rootFS) symlinkAt(target, link string) (experimentalsys.Errno, bool) {
	return f.entryOp(link, false, func(fd int, base string) error { return unix.Symlinkat(target, fd, base) })
}

func (f *rootFS) renameAt(from, to string) (experimentalsys.Errno, bool) {
	return f.entryOp2(from, to, func(a int, ab string, b int, bb string) error { return unix.Renameat(a, ab, b, bb) })
}

func (f *rootFS) linkAt(from, to string) (experimentalsys.Errno, bool) {
	return f.entryOp2(from, to, func(a int, ab string, b int, bb string) error { return unix.Linkat(a, ab, b, bb, 0) })
}
