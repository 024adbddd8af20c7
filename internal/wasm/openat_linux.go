package wasm

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
	"golang.org/x/sys/unix"
)

// openForWrite opens p for writing through a descriptor of its parent
// directory, after judging, where that directory really is, the entry it
// opens: the grant is applied before anything is created or truncated, and
// nothing can be swapped between the check and the open (the parent is
// held open; the last component is opened without following a symlink).
// A last component that is a symlink is followed here, one link at a time
// from the parent it was found in, each step judged the same way, so that
// O_CREAT through a planted link creates nothing where the grant does not
// allow it. flag carries nonBlock (osFlag), so a FIFO there, or one that
// O_CREAT finds made in the meantime, is not waited on; it is refused
// (kindErr). handled is false when p names no entry (".", ".."); the
// caller then opens the ordinary way.
func (f *rootFS) openForWrite(p string, flag int, perm fs.FileMode) (file *os.File, e experimentalsys.Errno, handled bool) {
	for links := 0; ; links++ {
		if links > maxLinks {
			return nil, experimentalsys.ELOOP, true
		}
		dir, base := path.Split(p)
		if base == "" || base == "." || base == ".." {
			if links > 0 {
				return nil, experimentalsys.EISDIR, true // a link to a directory
			}
			return nil, 0, false
		}
		d, err := f.root.OpenFile(clean(dir), os.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return nil, errno(err), true
		}
		real, ok := openedPath(d)
		if !ok {
			d.Close()
			return nil, experimentalsys.ENOENT, true
		}
		x, ok := f.relOf(real)
		if !ok {
			d.Close()
			return nil, experimentalsys.EPERM, true
		}
		if e := f.judge(clean(x+"/"+base), true); e != 0 {
			d.Close()
			return nil, e, true
		}
		fd, err := unix.Openat(int(d.Fd()), base, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		if errors.Is(err, unix.ELOOP) && flag&unix.O_NOFOLLOW == 0 {
			target, err := readlinkat(int(d.Fd()), base)
			d.Close()
			if err != nil {
				return nil, errno(err), true
			}
			next, ok := linkTarget(x, target)
			if !ok {
				return nil, experimentalsys.EPERM, true // as os.Root refuses it
			}
			p = next
			continue
		}
		if err != nil {
			d.Close()
			return nil, errno(err), true
		}
		nf := os.NewFile(uintptr(fd), filepath.Join(real, base))
		d.Close()
		if _, e := statKind(nf); e != 0 {
			return nil, e, true
		}
		return nf, 0, true
	}
}

// linkTarget returns where the symlink target t leads from the directory dir
// (both relative to the root), and false when it leads out of the root or
// is absolute, which os.Root refuses too.
func linkTarget(dir, t string) (string, bool) {
	if t == "" || path.IsAbs(filepath.ToSlash(t)) {
		return "", false
	}
	j := path.Join(dir, filepath.ToSlash(t))
	if j == ".." || strings.HasPrefix(j, "../") {
		return "", false
	}
	return clean(j), true
}

// readlinkat reads the symlink base in the directory fd.
func readlinkat(fd int, base string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(fd, base, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// parent opens the directory holding p (following symlinks inside the
// root) and returns it with p's last component, after judging the entry
// where that directory really is: a write there must be allowed, and an
// entry that moves (renamed, removed) must not hold what stays (holds).
// ok is false when the platform cannot say where the directory is.
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
		return nil, "", experimentalsys.ENOENT, true
	}
	x, inside := f.relOf(real)
	if !inside {
		d.Close()
		return nil, "", experimentalsys.EPERM, true
	}
	full := clean(x + "/" + base)
	e = f.judge(full, true)
	if e == 0 && moves && f.holds(full) {
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

// openPath opens p itself (O_PATH: no read, no write), following a last
// symlink when follow, and judges where the opened file really is: the
// metadata calls (stat, readlink, utimens) then work on that descriptor,
// so a directory swapped for a symlink between the check by name and the
// call cannot make them touch, or tell of, a denied or protected path.
// handled is false where the platform cannot say where a file is.
func (f *rootFS) openPath(p string, write, follow bool) (file *os.File, e experimentalsys.Errno, handled bool) {
	if f.grant == nil {
		return nil, 0, false
	}
	if beforeOpen != nil {
		beforeOpen()
	}
	flag := unix.O_PATH
	if !follow {
		flag |= unix.O_NOFOLLOW
	}
	file, err := f.root.OpenFile(p, flag, 0)
	if err != nil {
		return nil, errno(err), true
	}
	if e := f.verifyOpened(file, write); e != 0 {
		file.Close()
		return nil, e, true
	}
	return file, 0, true
}

// statAt is Stat or Lstat through openPath.
func (f *rootFS) statAt(p string, follow bool) (sys.Stat_t, experimentalsys.Errno, bool) {
	file, e, ok := f.openPath(p, false, follow)
	if !ok || e != 0 {
		return sys.Stat_t{}, e, ok
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return sys.Stat_t{}, errno(err), true
	}
	return sys.NewStat_t(fi), 0, true
}

// readlinkAt is Readlink through openPath.
func (f *rootFS) readlinkAt(p string) (string, experimentalsys.Errno, bool) {
	file, e, ok := f.openPath(p, false, false)
	if !ok || e != 0 {
		return "", e, ok
	}
	defer file.Close()
	t, err := readlinkat(int(file.Fd()), "")
	if err != nil {
		return "", errno(err), true
	}
	return t, 0, true
}

// utimensAt is Utimens through openPath: the times are set on the file
// that was judged, through its descriptor's /proc link.
func (f *rootFS) utimensAt(p string, atim, mtim int64) (experimentalsys.Errno, bool) {
	file, e, ok := f.openPath(p, true, true)
	if !ok || e != 0 {
		return e, ok
	}
	defer file.Close()
	return utimensFD(file, atim, mtim), true
}

// utimensFD sets the times of the open file (any kind of descriptor).
func utimensFD(file *os.File, atim, mtim int64) experimentalsys.Errno {
	fi, err := file.Stat()
	if err != nil {
		return errno(err)
	}
	st := sys.NewStat_t(fi)
	ts := []unix.Timespec{unix.NsecToTimespec(times(atim, st.Atim).UnixNano()), unix.NsecToTimespec(times(mtim, st.Mtim).UnixNano())}
	return errno(unix.UtimesNanoAt(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(file.Fd())), ts, 0))
}

// utimensHeld sets the times of the open file r after judging where it
// really is, never by its name, which may lead elsewhere by now.
func (r *rootFile) utimensHeld(atim, mtim int64) (experimentalsys.Errno, bool) {
	if r.fs.grant == nil {
		return 0, false
	}
	if e := r.fs.verifyOpened(r.file, true); e != 0 {
		if e == experimentalsys.ENOENT {
			e = experimentalsys.EACCES
		}
		return e, true
	}
	return utimensFD(r.file, atim, mtim), true
}
