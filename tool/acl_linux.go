package tool

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// The access ACL of a replaced file
//
// A file with a POSIX access ACL shows the ACL's mask as its group bits,
// and its owning group has only the ACL's group entry: a file whose ACL
// gives user bob rw and the group nothing has mode 0660. A replacement is a
// new inode; given only the old mode it would hand the group bob's rw. So
// the ACL goes to the new file with the mode; where it cannot be set here
// (a named user or group outside the sandbox's user namespace, a file
// system that refuses it) the file is written in place (errNotKept), which
// keeps it. A file without an ACL keeps having none, whatever default ACL
// its directory gives new files.

const aclAccess = "system.posix_acl_access"

// ACL entry tags and the kernel's undefined id (linux/posix_acl_xattr.h).
const (
	aclTagUser     = 0x02
	aclTagGroup    = 0x08
	aclHeader      = 4
	aclEntry       = 8
	aclUndefinedID = 0xffffffff
)

// keepACL gives f, the replacement of the file at rel (old), old's access
// ACL, or returns errNotKept where it cannot. A replacement of a file with
// none has none either: the access ACL it inherited from its directory's
// default ACL, which the old file did not have (made before the default
// was set, or its ACL removed since), would give the named users and
// groups access they did not have.
func (t target) keepACL(f *os.File, rel string, old fs.FileInfo) error {
	acl, err := t.readACL(rel, old)
	if err != nil {
		return err
	}
	if acl == nil {
		err := retryEINTR(func() error { return unix.Fremovexattr(int(f.Fd()), aclAccess) })
		switch {
		case err == nil:
			return f.Chmod(old.Mode().Perm())
		case errors.Is(err, unix.ENODATA), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
			return nil
		default:
			return errNotKept
		}
	}
	if !aclIDsKnown(acl) {
		return errNotKept
	}
	if err := retryEINTR(func() error { return unix.Fsetxattr(int(f.Fd()), aclAccess, acl, 0) }); err != nil {
		return errNotKept
	}
	return nil
}

// readACL returns the access ACL of the file at rel, which must still be
// old; nil when it has none (or its file system has no ACLs).
func (t target) readACL(rel string, old fs.FileInfo) ([]byte, error) {
	src, err := t.root.OpenFile(rel, os.O_RDONLY|openFlags, 0)
	if err != nil {
		// A file the caller may write but not read (mode 0200).
		src, err = t.root.OpenFile(rel, os.O_WRONLY|openFlags, 0)
		if err != nil {
			return nil, err
		}
	}
	defer src.Close()
	if fi, err := src.Stat(); err != nil || !os.SameFile(fi, old) {
		return nil, errors.New("the file was replaced while being written")
	}
	buf := make([]byte, 512)
	for {
		var n int
		err := retryEINTR(func() (err error) {
			n, err = unix.Fgetxattr(int(src.Fd()), aclAccess, buf)
			return err
		})
		switch {
		case err == nil:
			return buf[:n], nil
		case errors.Is(err, unix.ENODATA), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
			return nil, nil
		case errors.Is(err, unix.ERANGE) && len(buf) < 1<<20:
			buf = make([]byte, 2*len(buf))
		default:
			return nil, &os.PathError{Op: "getxattr", Path: rel, Err: err}
		}
	}
}

// aclIDsKnown reports whether every named user and group of acl is one this
// user namespace can name: the kernel shows one it cannot as the undefined
// id or as the overflow id, and setting either would name someone else.
func aclIDsKnown(acl []byte) bool {
	ok := true
	eachACLEntry(acl, func(tag, _ uint16, id uint32) {
		if (tag == aclTagUser || tag == aclTagGroup) && (id == aclUndefinedID || id == overflowID) {
			ok = false
		}
	})
	return ok
}

// overflowID is the kernel's default overflowuid and overflowgid.
const overflowID = 65534

func eachACLEntry(acl []byte, fn func(tag, perm uint16, id uint32)) {
	if len(acl) < aclHeader {
		return
	}
	for b := acl[aclHeader:]; len(b) >= aclEntry; b = b[aclEntry:] {
		fn(binary.LittleEndian.Uint16(b), binary.LittleEndian.Uint16(b[2:]), binary.LittleEndian.Uint32(b[4:]))
	}
}
