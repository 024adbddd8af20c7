package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// maxInotify is how many inotify instances counts tries to make: more
// than a bounded sandbox may hold, fewer than a host user's default 128.
const maxInotify = 100

// counts reports what the sandbox may make of the kernel objects counted
// per user or for the whole machine: the user namespace's bounds
// (/proc/sys/user), RLIMIT_SIGPENDING and RLIMIT_MSGQUEUE, whether an
// 80 KiB message queue can be made, how many inotify instances it made
// before the kernel refused, and the errnos of io_setup and fanotify_init.
func counts() {
	for _, name := range []string{"max_inotify_instances", "max_inotify_watches", "max_fanotify_groups", "max_fanotify_marks", "max_user_namespaces"} {
		b, err := os.ReadFile("/proc/sys/user/" + name)
		v := strings.TrimSpace(string(b))
		if err != nil {
			v = "unreadable"
		}
		fmt.Fprintf(os.Stdout, "%s %s\n", name, v)
	}
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_SIGPENDING, &rl); err == nil {
		fmt.Fprintf(os.Stdout, "sigpending_cur %d\nsigpending_max %d\n", rl.Cur, rl.Max)
	}
	if err := unix.Getrlimit(unix.RLIMIT_MSGQUEUE, &rl); err == nil {
		fmt.Fprintf(os.Stdout, "msgqueue_max %d\n", rl.Max)
	}
	fmt.Fprintf(os.Stdout, "mq_open_80k %d\n", mqOpen80k())
	var ctx uint64
	_, _, e := unix.Syscall(unix.SYS_IO_SETUP, 8, uintptr(unsafe.Pointer(&ctx)), 0)
	fmt.Fprintf(os.Stdout, "io_setup %d\n", e)
	fd, err := unix.FanotifyInit(unix.FAN_CLASS_NOTIF|unix.FAN_REPORT_FID, 0)
	fmt.Fprintf(os.Stdout, "fanotify_init %d\n", errnoOf(err))
	if fd >= 0 {
		unix.Close(fd)
	}
	n := 0
	for ; n < maxInotify; n++ {
		if _, err := unix.InotifyInit1(unix.IN_CLOEXEC); err != nil {
			break
		}
	}
	fmt.Fprintf(os.Stdout, "inotify_instances %d\n", n)
}

// errnoOf is err's errno, 0 for none.
func errnoOf(err error) int {
	var e unix.Errno
	if errors.As(err, &e) {
		return int(e)
	}
	if err != nil {
		return -1
	}
	return 0
}

// rootOnlyProcFiles are files at the top of /proc that only root may
// read on the host; a backend may mask them with something else.
var rootOnlyProcFiles = []string{"kpageflags", "kpagecount", "kpagecgroup", "slabinfo", "vmallocinfo", "pagetypeinfo", "kmsg", "kcore", "timer_list", "sched_debug"}

// rootOnlyProc reports, for each of rootOnlyProcFiles present and each
// other file at the top of /proc that others may not read, how many bytes
// a non-blocking read of it returned ("-1" when it was refused).
func rootOnlyProc() {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		fmt.Fprintf(os.Stderr, "probe proc: %v\n", err)
		os.Exit(1)
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil || !slices.Contains(rootOnlyProcFiles, e.Name()) && (!fi.Mode().IsRegular() || fi.Mode().Perm()&0o004 != 0) {
			continue
		}
		n := -1
		if fd, err := unix.Open("/proc/"+e.Name(), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
			buf := make([]byte, 64)
			if n, err = unix.Read(fd, buf); err != nil {
				n = -1
			}
			unix.Close(fd)
		}
		fmt.Fprintf(os.Stdout, "proc_%s %d\n", e.Name(), n)
	}
}

// mqOpen80k makes a POSIX message queue of ten 8 KiB messages (80 KiB and
// more counted against the user) and removes it; it returns the errno, 0
// when the queue was made.
func mqOpen80k() int {
	attr := struct {
		flags, maxmsg, msgsize, curmsgs int64
		reserved                        [4]int64
	}{maxmsg: 10, msgsize: 8192}
	name, err := unix.BytePtrFromString("airlock-probe-mq")
	if err != nil {
		return -1
	}
	fd, _, e := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(name)), unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600, uintptr(unsafe.Pointer(&attr)), 0, 0)
	if e != 0 {
		return int(e)
	}
	unix.Close(int(fd))
	_, _, _ = unix.Syscall(unix.SYS_MQ_UNLINK, uintptr(unsafe.Pointer(name)), 0, 0)
	return 0
}
