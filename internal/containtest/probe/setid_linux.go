package main

import (
	"fmt"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// setID tries every system call that can give a file in dir the
// set-user-ID or set-group-ID bit, each on a file or name of its own, and
// prints "NAME ERRNO" for each, and "dir DIR" last. The host then checks
// that no file in dir has either bit (a file outside the sandbox with one,
// owned by the sandbox's user, runs as that user for anyone on the host).
func setID(dir string) {
	n := 0
	next := func() string {
		n++
		return filepath.Join(dir, fmt.Sprintf("s%d", n))
	}
	file := func() string {
		p := next()
		if err := os.WriteFile(p, []byte("#!/bin/sh\nid\n"), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "probe setid:", err)
			os.Exit(1)
		}
		return p
	}
	report := func(name string, r uintptr, errno unix.Errno, fd bool) {
		if errno == 0 && fd {
			unix.Close(int(r))
		}
		fmt.Fprintf(os.Stdout, "%s %d\n", name, errno)
	}
	sys := func(name string, nr uintptr, fd bool, args ...uintptr) {
		var a [6]uintptr
		copy(a[:], args)
		r, _, errno := unix.Syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
		report(name, r, errno, fd)
	}
	const rw = unix.O_CREAT | unix.O_WRONLY | unix.O_CLOEXEC
	sys("fchmodat_suid", unix.SYS_FCHMODAT, false, at, str(file()), 0o4755)
	sys("fchmodat_sgid", unix.SYS_FCHMODAT, false, at, str(file()), 0o2755)
	sys("fchmodat2_suid", 452, false, at, str(file()), 0o4755, 0)
	f, err := os.OpenFile(file(), os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe setid:", err)
		os.Exit(1)
	}
	sys("fchmod_suid", unix.SYS_FCHMOD, false, f.Fd(), 0o6755)
	f.Close()
	sys("openat_creat_suid", unix.SYS_OPENAT, true, at, str(next()), rw, 0o4755)
	sys("openat_tmpfile_suid", unix.SYS_OPENAT, true, at, str(dir), unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o4755)
	sys("mknodat_suid", unix.SYS_MKNODAT, false, at, str(next()), unix.S_IFREG|0o4755, 0)
	how := unix.OpenHow{Flags: rw, Mode: 0o4755}
	sys("openat2_creat_suid", unix.SYS_OPENAT2, true, at, str(next()), uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how))
	sys("fchmodat_plain", unix.SYS_FCHMODAT, false, at, str(file()), 0o750)
	sys("openat_creat_plain", unix.SYS_OPENAT, true, at, str(next()), rw, 0o755)
	setIDArch(next, file, sys)
	fmt.Fprintln(os.Stdout, "dir", dir)
}
