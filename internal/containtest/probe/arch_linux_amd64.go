package main

import "golang.org/x/sys/unix"

func archCalls() []call {
	return []call{
		{"iopl", unix.SYS_IOPL, [6]uintptr{3}},
		{"modify_ldt", unix.SYS_MODIFY_LDT, [6]uintptr{0, 0, 0}},
	}
}

// setIDArch tries the calls only x86_64 has that can set a file's mode.
func setIDArch(next, file func() string, sys func(name string, nr uintptr, fd bool, args ...uintptr)) {
	sys("chmod_suid", unix.SYS_CHMOD, false, str(file()), 0o4755)
	sys("creat_suid", unix.SYS_CREAT, true, str(next()), 0o4755)
	sys("open_creat_suid", unix.SYS_OPEN, true, str(next()), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o2755)
	sys("mknod_suid", unix.SYS_MKNOD, false, str(next()), unix.S_IFREG|0o4755, 0)
}
