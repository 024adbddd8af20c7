package grant

import (
	"syscall"
	"unsafe"
)

// sysNewfstatat is newfstatat(2), the x86_64 number of fstatat.
const sysNewfstatat = syscall.SYS_NEWFSTATAT

// atSymlinkNofollow is AT_SYMLINK_NOFOLLOW.
const atSymlinkNofollow = 0x100

// newfstatat is fstatat(fd, name, st, AT_SYMLINK_NOFOLLOW), retried on
// EINTR; scratch holds the NUL-terminated name.
func newfstatat(fd int, name []byte, st *syscall.Stat_t, scratch *[]byte) error {
	p := append(append((*scratch)[:0], name...), 0)
	*scratch = p
	for {
		_, _, e := syscall.Syscall6(sysNewfstatat, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(unsafe.Pointer(st)), atSymlinkNofollow, 0, 0)
		switch e {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		}
		return e
	}
}
