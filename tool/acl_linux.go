package tool

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// The access ACL and user attributes of a replaced file
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
//
// Its user extended attributes (user.*: a desktop's tags, a sync client's
// ids) go to the new file too, or it is written in place. Others are not
// copied: security.capability must never come back on rewritten content
// (the kernel drops it on an in-place write too), security.selinux is the
// directory's for a new file, and trusted.* is not readable here.

const (
	aclAccess = "system.posix_acl_access"
	userXattr = "user."
)

// ACL entry tags and the kernel's undefined id (linux/posix_acl_xattr.h).
const (
	aclTagUser     = 0x02
	aclTagGroup    = 0x08
	aclHeader      = 4
	aclEntry       = 8
	aclUndefinedID = 0xffffffff
)

// maxXattrValue bounds one attribute's value (the kernel's XATTR_SIZE_MAX).
const maxXattrValue = 64 << 10

// keepAttrs gives f, the replacement of the file at rel (old), old's access
// ACL and user extended attributes, or returns errNotKept where it cannot.
// A replacement of a file with no ACL has none either: the access ACL it
// inherited from its directory's default ACL, which the old file did not
// have (made before the default was set, or its ACL removed since), would
// give the named users and groups access they did not have.
func (t target) keepAttrs(f *os.File, rel string, old fs.FileInfo) error {
	src, err := t.root.OpenFile(rel, os.O_RDONLY|openFlags, 0)
	if err != nil {
		// A file the caller may write but not read (mode 0200).
		src, err = t.root.OpenFile(rel, os.O_WRONLY|openFlags, 0)
		if err != nil {
			return err
		}
	}
	defer src.Close()
	if fi, err := src.Stat(); err != nil || !os.SameFile(fi, old) {
		return errors.New("the file was replaced while being written")
	}
	sfd, dfd := int(src.Fd()), int(f.Fd())
	acl, err := getXattr(sfd, aclAccess)
	if err != nil {
		return &os.PathError{Op: "getxattr", Path: rel, Err: err}
	}
	switch {
	case acl != nil:
		if !aclIDsKnown(acl) {
			return errNotKept
		}
		if err := retryEINTR(func() error { return unix.Fsetxattr(dfd, aclAccess, acl, 0) }); err != nil {
			return errNotKept
		}
	default:
		err := retryEINTR(func() error { return unix.Fremovexattr(dfd, aclAccess) })
		switch {
		case err == nil:
			if err := f.Chmod(old.Mode().Perm()); err != nil {
				return err
			}
		case noXattr(err):
		default:
			return errNotKept
		}
	}
	names, err := listXattrs(sfd)
	if err != nil {
		return &os.PathError{Op: "listxattr", Path: rel, Err: err}
	}
	for _, name := range names {
		if !strings.HasPrefix(name, userXattr) {
			continue
		}
		v, err := getXattr(sfd, name)
		if err != nil {
			return &os.PathError{Op: "getxattr", Path: rel, Err: err}
		}
		if v == nil {
			continue // removed meanwhile
		}
		if err := retryEINTR(func() error { return unix.Fsetxattr(dfd, name, v, 0) }); err != nil {
			return errNotKept
		}
	}
	return nil
}

// noXattr reports whether err says the attribute or attributes at all are
// not there.
func noXattr(err error) bool {
	return errors.Is(err, unix.ENODATA) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS)
}

// getXattr returns the value of fd's attribute name, nil when it has none
// (or its file system has no attributes); an empty value is not nil.
func getXattr(fd int, name string) ([]byte, error) {
	buf := make([]byte, 256)
	for {
		var n int
		err := retryEINTR(func() (err error) {
			n, err = unix.Fgetxattr(fd, name, buf)
			return err
		})
		switch {
		case err == nil:
			return append([]byte{}, buf[:n]...), nil
		case noXattr(err):
			return nil, nil
		case errors.Is(err, unix.ERANGE) && len(buf) < maxXattrValue:
			buf = make([]byte, min(4*len(buf), maxXattrValue))
		default:
			return nil, err
		}
	}
}

// listXattrs returns the names of fd's extended attributes.
func listXattrs(fd int) ([]string, error) {
	buf := make([]byte, 1024)
	for {
		var n int
		err := retryEINTR(func() (err error) {
			n, err = unix.Flistxattr(fd, buf)
			return err
		})
		switch {
		case err == nil:
			var names []string
			for name := range bytes.SplitSeq(buf[:n], []byte{0}) {
				if len(name) > 0 {
					names = append(names, string(name))
				}
			}
			return names, nil
		case noXattr(err):
			return nil, nil
		case errors.Is(err, unix.ERANGE) && len(buf) < maxXattrValue:
			buf = make([]byte, min(4*len(buf), maxXattrValue))
		default:
			return nil, err
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
