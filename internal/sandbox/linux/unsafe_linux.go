package linux

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Raw system calls for the placeholders the host makes and removes
// (placeholder_linux.go): the file system calls that create or free an
// inode, which never wait for another process but can take a while on a
// slow file system (ext4's inode allocator, the eviction of an unlinked
// inode, a discard), made without telling the Go scheduler (RawSyscall6).
// Through the ordinary wrappers, a goroutine that had run for 10 ms
// without rescheduling (a hold or release of 39 placeholders) lost its P
// to sysmon in nearly every one of them: a handoff to another thread, a
// futex wake and two context switches each time, for a goroutine that had
// nothing to wait for. The quick calls around them (fstat, flock, xattr
// reads) keep the ordinary wrappers. Each retries EINTR and returns a
// unix.Errno, as the x/sys/unix wrappers do.
//
// Only on a local file system (localFS): on a network or FUSE file system
// the same call can wait for a server indefinitely, and a thread stuck in a
// raw call keeps its P, so the next garbage collection's stop-the-world
// would wait with it and stall every session of the broker, not just the
// call whose tree it is. There the ordinary wrappers are used. localFS
// tells the file system of the directory a call acts in, not of what a
// name in it leads to: a call that may open an existing name (the root
// of a FUSE or network mount placed there) is never made raw.

// localFS reports whether fd is on a file system whose calls never wait
// for anything but the local disk: the raw calls are used only there.
func localFS(fd int) bool {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return false
	}
	switch uint32(st.Type) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC,
		unix.TMPFS_MAGIC, unix.F2FS_SUPER_MAGIC:
		return true
	}
	return false
}

// rawDir is a directory the placeholder calls act in by name, whether
// they may be raw there (localFS, told once when the directory is opened,
// not for every call), which directory it is (zero if fstat failed), and
// its name in the placeholder depot (depotKey; empty where it has none).
type rawDir struct {
	fd  int
	raw bool
	id  dirID
	key string
}

// newRawDir is the directory open at fd.
func newRawDir(fd int) rawDir {
	d := rawDir{fd: fd, raw: localFS(fd)}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil {
		d.id = dirID{st.Dev, st.Ino}
		d.key = depotKey(fd, st.Dev)
	}
	return d
}

// rawPath is path as a NUL-terminated byte string for a raw system call.
func rawPath(path string) (*byte, error) { return unix.BytePtrFromString(path) }

// rawRetry makes the call, raw when raw is set, else through the
// scheduler, and retries EINTR. The caller keeps every pointer it passes
// alive (runtime.KeepAlive) until this returns: the arguments are plain
// integers here.
func rawRetry(raw bool, trap, a1, a2, a3, a4, a5, a6 uintptr) (uintptr, error) {
	call := unix.Syscall6
	if raw {
		call = unix.RawSyscall6
	}
	for {
		r, _, e := call(trap, a1, a2, a3, a4, a5, a6)
		switch e {
		case 0:
			return r, nil
		case unix.EINTR:
			continue
		}
		return r, e
	}
}

// openat is openat(2) of name in d.
func (d rawDir) openat(name string, flags int, mode uint32) (int, error) {
	p, err := rawPath(name)
	if err != nil {
		return -1, err
	}
	r, err := rawRetry(d.raw, unix.SYS_OPENAT, uintptr(d.fd), uintptr(unsafe.Pointer(p)), uintptr(flags|unix.O_LARGEFILE), uintptr(mode), 0, 0)
	runtime.KeepAlive(p)
	if err != nil {
		return -1, err
	}
	return int(r), nil
}

// mkdirat is mkdirat(2) of name in d.
func (d rawDir) mkdirat(name string, mode uint32) error {
	p, err := rawPath(name)
	if err != nil {
		return err
	}
	_, err = rawRetry(d.raw, unix.SYS_MKDIRAT, uintptr(d.fd), uintptr(unsafe.Pointer(p)), uintptr(mode), 0, 0, 0)
	runtime.KeepAlive(p)
	return err
}

// unlinkat is unlinkat(2) of name in d.
func (d rawDir) unlinkat(name string, flags int) error {
	p, err := rawPath(name)
	if err != nil {
		return err
	}
	_, err = rawRetry(d.raw, unix.SYS_UNLINKAT, uintptr(d.fd), uintptr(unsafe.Pointer(p)), uintptr(flags), 0, 0, 0)
	runtime.KeepAlive(p)
	return err
}

// renameat2 is renameat2(2) from one name in d to another.
func (d rawDir) renameat2(from, to string, flags uint) error {
	return renameBetween(d.raw, d.fd, from, d.fd, to, flags)
}

// renameBetween is renameat2(2) of from in the directory fromDir to to in
// toDir, raw when raw is set (both directories on a local file system).
func renameBetween(raw bool, fromDir int, from string, toDir int, to string, flags uint) error {
	f, err := rawPath(from)
	if err != nil {
		return err
	}
	t, err := rawPath(to)
	if err != nil {
		return err
	}
	_, err = rawRetry(raw, unix.SYS_RENAMEAT2, uintptr(fromDir), uintptr(unsafe.Pointer(f)), uintptr(toDir), uintptr(unsafe.Pointer(t)), uintptr(flags), 0)
	runtime.KeepAlive(f)
	runtime.KeepAlive(t)
	return err
}

// rawFsetxattr is fsetxattr(2) of fd, raw when raw is set.
func rawFsetxattr(raw bool, fd int, attr string, data []byte, flags int) error {
	p, err := rawPath(attr)
	if err != nil {
		return err
	}
	var d unsafe.Pointer
	if len(data) > 0 {
		d = unsafe.Pointer(&data[0])
	}
	_, err = rawRetry(raw, unix.SYS_FSETXATTR, uintptr(fd), uintptr(unsafe.Pointer(p)), uintptr(d), uintptr(len(data)), uintptr(flags), 0)
	runtime.KeepAlive(p)
	runtime.KeepAlive(data)
	return err
}

// rawClose is close(2), raw when raw is set. Closing the last descriptor
// of an unlinked placeholder frees its inode, which on some file systems
// takes a while but never waits for another process. EINTR is not
// retried: Linux has released the descriptor by then.
func rawClose(raw bool, fd int) {
	if !raw {
		_ = unix.Close(fd)
		return
	}
	_, _, _ = unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0)
}
