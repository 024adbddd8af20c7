package grant

import (
	"os"
	"syscall"
)

// File systems whose names are exact unless a directory folds case, in
// which case the kernel's directory cache folds them too.
const (
	ext4Magic  = 0xef53
	xfsMagic   = 0x58465342
	btrfsMagic = 0x9123683e
	tmpfsMagic = 0x01021994
	f2fsMagic  = 0xf2f52010
)

// masksCoverAllSpellings reports whether dir is on a file system (ext4, xfs, btrfs,
// f2fs, tmpfs) where a mount over a name covers every spelling that
// reaches its file: names there are exact, or fold case in the directory
// cache as well as on disk.
func masksCoverAllSpellings(dir string) bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return false
	}
	switch uint32(st.Type) {
	case ext4Magic, xfsMagic, btrfsMagic, tmpfsMagic, f2fsMagic:
		return true
	}
	return false
}

// sameDevice reports whether a and b are on one device.
func sameDevice(a, b os.FileInfo) bool {
	sa, ok1 := a.Sys().(*syscall.Stat_t)
	sb, ok2 := b.Sys().(*syscall.Stat_t)
	return ok1 && ok2 && sa.Dev == sb.Dev
}
