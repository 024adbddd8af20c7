//go:build linux && !amd64

package grant

import "syscall"

// sysNewfstatat is 0 where statAt opens and fstats instead.
const sysNewfstatat = 0

func newfstatat(fd int, name []byte, st *syscall.Stat_t, scratch *[]byte) error {
	return syscall.ENOSYS
}
