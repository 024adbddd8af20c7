package grant

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// File systems whose names are exact unless a directory has the casefold
// flag.
const (
	ext4Magic  = 0xef53
	xfsMagic   = 0x58465342
	btrfsMagic = 0x9123683e
	tmpfsMagic = 0x01021994
	f2fsMagic  = 0xf2f52010
)

// fsIocGetflags is FS_IOC_GETFLAGS, and fsCasefoldFL FS_CASEFOLD_FL.
const (
	fsIocGetflags = 0x80086601
	fsCasefoldFL  = 0x40000000
)

// treeFolds reports whether a sandbox could reach a name below dir by
// another spelling, and why: dir, or a file system mounted below it (a
// bind mount takes those too), folds case (dirFolds).
func treeFolds(dir string) (bool, string) {
	if folds, why := dirFolds(dir); folds {
		return true, why
	}
	below, err := mountsBelow(dir)
	if err != nil {
		return true, fmt.Sprintf("the mounts below %s cannot be listed: %v", dir, err)
	}
	for _, m := range below {
		if folds, why := dirFolds(m); folds {
			return true, why
		}
	}
	return false, ""
}

// dirFolds reports whether the file system of directory dir may reach a
// name by another spelling. On ext4, xfs, btrfs, f2fs and tmpfs names are
// exact unless the directory has the casefold flag, which folds them in
// the directory cache too, but the scans for protected names compare bytes
// (a .GIT there would be found by git and missed by them): refused as
// well. Elsewhere dirFoldsByProbe tells.
func dirFolds(dir string) (bool, string) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return true, fmt.Sprintf("%s's file system cannot be told: %v", dir, err)
	}
	switch uint32(st.Type) {
	case ext4Magic, xfsMagic, btrfsMagic, tmpfsMagic, f2fsMagic:
		folded, told := casefolded(dir)
		switch {
		case !told:
			return dirFoldsByProbe(dir)
		case folded:
			return true, dir + " has the casefold attribute"
		}
		return false, ""
	}
	return dirFoldsByProbe(dir)
}

// casefolded reports whether directory dir has the casefold flag; told is
// false when that could not be read (the probe decides then). A file
// system with no inode flags at all (ENOTTY) has no casefold.
func casefolded(dir string) (folded, told bool) {
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false, false
	}
	defer syscall.Close(fd)
	var flags uint64 // the kernel writes an int
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), fsIocGetflags, uintptr(unsafe.Pointer(&flags))); e != 0 {
		return false, e == syscall.ENOTTY
	}
	return uint32(flags)&fsCasefoldFL != 0, true
}

// mountsBelow lists the mount points strictly below dir, from
// /proc/self/mountinfo.
func mountsBelow(dir string) ([]string, error) {
	mounts, err := parseMountinfo() // kernelfs_linux.go
	if err != nil {
		return nil, err
	}
	prefix := strings.TrimSuffix(filepath.Clean(dir), "/") + "/"
	var out []string
	for _, m := range mounts {
		if strings.HasPrefix(m.point, prefix) {
			out = append(out, m.point)
		}
	}
	return out, nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
