package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: probe sys | counts | proc | core | net PORT | unix PATH... | mem MIB | memfd MIB | setid DIR | lease FILE... | prealloc FILE")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "sys":
		sweep()
	case "counts":
		counts()
	case "proc":
		rootOnlyProc()
	case "net":
		if len(os.Args) != 3 {
			fmt.Fprintln(os.Stderr, "usage: probe net PORT")
			os.Exit(2)
		}
		dials(os.Args[2])
	case "core":
		coreLimit()
	case "unix":
		if len(os.Args) < 3 {
			fmt.Fprintln(os.Stderr, "usage: probe unix PATH...")
			os.Exit(2)
		}
		unixDials(os.Args[2:])
	case "lease":
		if len(os.Args) < 3 {
			fmt.Fprintln(os.Stderr, "usage: probe lease FILE...")
			os.Exit(2)
		}
		leases(os.Args[2:])
	case "prealloc":
		if len(os.Args) != 3 {
			fmt.Fprintln(os.Stderr, "usage: probe prealloc FILE")
			os.Exit(2)
		}
		prealloc(os.Args[2])
	case "setid":
		if len(os.Args) != 3 {
			fmt.Fprintln(os.Stderr, "usage: probe setid DIR")
			os.Exit(2)
		}
		setID(os.Args[2])
	case "mem", "memfd":
		if len(os.Args) != 3 {
			fmt.Fprintf(os.Stderr, "usage: probe %s MIB\n", os.Args[1])
			os.Exit(2)
		}
		n, err := strconv.Atoi(os.Args[2])
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "probe %s: %q is not a positive number of MiB\n", os.Args[1], os.Args[2])
			os.Exit(2)
		}
		if os.Args[1] == "mem" {
			grow(n)
		} else {
			growMemfd(n)
		}
	default:
		fmt.Fprintf(os.Stderr, "probe: unknown probe %q\n", os.Args[1])
		os.Exit(2)
	}
}

// call is one raw system call of the sweep.
type call struct {
	name string
	nr   uintptr
	args [6]uintptr
}

// strs keeps the strings passed to system calls alive (and unmoved: they
// are heap allocations) until the probe exits.
var strs [][]byte

// str is a NUL-terminated copy of s for a system call argument.
func str(s string) uintptr {
	b := append([]byte(s), 0)
	strs = append(strs, b)
	return uintptr(unsafe.Pointer(&b[0]))
}

// arg is a negative number as a system call argument.
func arg(n int64) uintptr { return uintptr(n) }

// absent is a path that exists nowhere.
const absent = "/nonexistent-airlock-probe"

var (
	at   = arg(unix.AT_FDCWD)
	neg1 = arg(-1)
)

func sweep() {
	calls := []call{
		// 35: nested user namespaces (a Go program is multithreaded, so
		// an unfiltered unshare fails with EINVAL, never succeeds).
		{"unshare_newuser", unix.SYS_UNSHARE, [6]uintptr{unix.CLONE_NEWUSER}},
		{"unshare_newns", unix.SYS_UNSHARE, [6]uintptr{unix.CLONE_NEWNS}},
		{"setns", unix.SYS_SETNS, [6]uintptr{neg1, 0}},
		// 36: the mount family.
		// (Targets that do not exist: an unfiltered call fails with ENOENT.)
		{"mount", unix.SYS_MOUNT, [6]uintptr{str("none"), str(absent), str("tmpfs"), 0, 0}},
		{"umount2", unix.SYS_UMOUNT2, [6]uintptr{str(absent), unix.MNT_DETACH}},
		{"chroot", unix.SYS_CHROOT, [6]uintptr{str(absent)}},
		{"pivot_root", unix.SYS_PIVOT_ROOT, [6]uintptr{str(absent), str(absent)}},
		{"fsopen", unix.SYS_FSOPEN, [6]uintptr{str("tmpfs"), 0}},
		{"fsmount", unix.SYS_FSMOUNT, [6]uintptr{neg1, 0, 0}},
		{"open_tree", unix.SYS_OPEN_TREE, [6]uintptr{at, str(absent), unix.OPEN_TREE_CLONE}},
		{"move_mount", unix.SYS_MOVE_MOUNT, [6]uintptr{neg1, str(""), at, str(absent), 0}},
		{"mount_setattr", unix.SYS_MOUNT_SETATTR, [6]uintptr{at, str(absent), 0, 0, 0}},
		// 37: PID 1 out of reach.
		{"ptrace_attach_1", unix.SYS_PTRACE, [6]uintptr{unix.PTRACE_ATTACH, 1, 0, 0}},
		{"process_vm_writev_1", unix.SYS_PROCESS_VM_WRITEV, [6]uintptr{1, 0, 0, 0, 0, 0}},
		// 40: io_uring.
		{"io_uring_setup", unix.SYS_IO_URING_SETUP, [6]uintptr{4, 0}},
		{"io_uring_enter", unix.SYS_IO_URING_ENTER, [6]uintptr{99, 0, 0, 0, 0, 0}},
		{"io_uring_register", unix.SYS_IO_URING_REGISTER, [6]uintptr{99, 0, 0, 0}},
		// 41: the syscall sweep.
		{"keyctl", unix.SYS_KEYCTL, [6]uintptr{unix.KEYCTL_GET_KEYRING_ID, arg(unix.KEY_SPEC_SESSION_KEYRING), 0}},
		{"add_key", unix.SYS_ADD_KEY, [6]uintptr{1, 1, 1, 0, 0}},
		{"request_key", unix.SYS_REQUEST_KEY, [6]uintptr{1, 1, 1, 0}},
		{"bpf", unix.SYS_BPF, [6]uintptr{0, 1, 0}},
		{"perf_event_open", unix.SYS_PERF_EVENT_OPEN, [6]uintptr{1, 0, neg1, neg1, 0}},
		{"userfaultfd", unix.SYS_USERFAULTFD, [6]uintptr{0}},
		{"open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT, [6]uintptr{neg1, 1, 0}},
		{"kexec_load", unix.SYS_KEXEC_LOAD, [6]uintptr{0, 0, 1, 0}},
		{"finit_module", unix.SYS_FINIT_MODULE, [6]uintptr{neg1, 1, 0}},
		{"swapon", unix.SYS_SWAPON, [6]uintptr{1, 0}},
		{"syslog", unix.SYS_SYSLOG, [6]uintptr{unix.SYSLOG_ACTION_READ_ALL, 1, 16}},
		{"acct", unix.SYS_ACCT, [6]uintptr{1}},
		{"personality", unix.SYS_PERSONALITY, [6]uintptr{0x0040000}}, // ADDR_NO_RANDOMIZE
		// chattr: the casefold attribute of a directory (stdin is no file
		// with flags: an unfiltered call fails with ENOTTY).
		{"ioctl_setflags", unix.SYS_IOCTL, [6]uintptr{0, unix.FS_IOC_SETFLAGS, 0}},
	}
	calls = append(calls, archCalls()...)
	for _, c := range calls {
		_, _, errno := unix.Syscall6(c.nr, c.args[0], c.args[1], c.args[2], c.args[3], c.args[4], c.args[5])
		fmt.Fprintf(os.Stdout, "%s %d\n", c.name, errno)
	}
}

// dials tries the network a sandbox must not have (hostile case 19):
// the host's loopback listener on port, and, only when the sandbox has no
// interface but lo (so nothing can leave it), addresses off this machine.
// coreLimit tries to lower and raise RLIMIT_CORE each way a process
// can, and reports the limit after each (core_N SOFT/HARD) with what the
// call returned (core_N_call ERRNO).
func coreLimit() {
	report := func(i int, err error) {
		var errno unix.Errno
		if err != nil && !errors.As(err, &errno) {
			errno = unix.EINVAL
		}
		var r unix.Rlimit
		if err := unix.Getrlimit(unix.RLIMIT_CORE, &r); err != nil {
			fmt.Fprintf(os.Stdout, "core_%d getrlimit-%s\n", i, word(err))
			return
		}
		fmt.Fprintf(os.Stdout, "core_%d %d/%d\n", i, r.Cur, r.Max)
		fmt.Fprintf(os.Stdout, "core_%d_call %d\n", i, errno)
	}
	report(0, nil)
	zero := unix.Rlimit{}
	_, _, e := unix.RawSyscall(unix.SYS_SETRLIMIT, unix.RLIMIT_CORE, uintptr(unsafe.Pointer(&zero)), 0)
	report(1, errnoErr(e))
	report(2, unix.Prlimit(0, unix.RLIMIT_CORE, &zero, nil))
	var old unix.Rlimit
	report(3, unix.Prlimit(0, unix.RLIMIT_CORE, &zero, &old))
	big := unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
	report(4, unix.Prlimit(0, unix.RLIMIT_CORE, &big, nil))
}

// errnoErr is e as an error, nil for 0.
func errnoErr(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// unixDials connects to each path as a Unix stream socket and reports,
// per path (unix_1, unix_2, ...), "connected" or why not.
func unixDials(paths []string) {
	for i, p := range paths {
		c, err := net.DialTimeout("unix", p, 2*time.Second)
		if err == nil {
			c.Close()
			fmt.Fprintf(os.Stdout, "unix_%d connected\n", i+1)
			continue
		}
		fmt.Fprintf(os.Stdout, "unix_%d %s\n", i+1, word(err))
	}
}

func dials(port string) {
	tcp := func(name, addr string) {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err == nil {
			c.Close()
			fmt.Fprintln(os.Stdout, name, "connected")
			return
		}
		fmt.Fprintln(os.Stdout, name, word(err))
	}
	tcp("host_loopback4", "127.0.0.1:"+port)
	tcp("host_loopback6", "[::1]:"+port)
	// (From /proc: a sandbox may refuse netlink sockets.)
	dev, err := os.ReadFile("/proc/net/dev")
	if err != nil {
		fmt.Fprintln(os.Stdout, "interfaces", word(err))
		return
	}
	lines := strings.Split(string(dev), "\n")
	for _, l := range lines[min(2, len(lines)):] {
		name, _, ok := strings.Cut(l, ":")
		if name = strings.TrimSpace(name); ok && name != "lo" {
			// Never send traffic off the machine: report and stop.
			fmt.Fprintln(os.Stdout, "interface", name)
			return
		}
	}
	fmt.Fprintln(os.Stdout, "interfaces lo")
	tcp("tcp4_testnet", "192.0.2.1:80")
	tcp("tcp6_testnet", "[2001:db8::1]:80")
	if c, err := net.Dial("udp", "192.0.2.1:53"); err != nil {
		fmt.Fprintln(os.Stdout, "udp4_testnet", word(err))
	} else {
		_, err := c.Write([]byte("x"))
		c.Close()
		fmt.Fprintln(os.Stdout, "udp4_testnet", word(err))
	}
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP)
	if err == nil {
		unix.Close(s)
	}
	fmt.Fprintln(os.Stdout, "raw_icmp", word(err))
}

// word is an error's errno name, "ok" for none, or "timeout".
func word(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return "error"
}

// growMemfd writes n MiB into a memfd (shmem, which no process's heap
// holds), one at a time.
func growMemfd(n int) {
	fd, err := unix.MemfdCreate("probe", 0)
	if err != nil {
		fmt.Fprintln(os.Stdout, "memfd_create", word(err))
		return
	}
	f := os.NewFile(uintptr(fd), "memfd")
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = 1
	}
	for i := 1; i <= n; i++ {
		if _, err := f.Write(chunk); err != nil {
			fmt.Fprintln(os.Stdout, "write", word(err))
			return
		}
	}
	fmt.Fprintln(os.Stdout, "allocated", n)
}

// grow allocates and touches n MiB, one at a time, reporting progress.
func grow(n int) {
	var keep [][]byte
	for i := 1; i <= n; i++ {
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = 1
		}
		keep = append(keep, b)
		if i%16 == 0 {
			fmt.Fprintln(os.Stdout, "mib", i)
		}
	}
	fmt.Fprintln(os.Stdout, "allocated", len(keep))
}

// leases tries a read lease and a write lease on each file, opened for
// reading, and prints "lease_rd_N ERRNO" and "lease_wr_N ERRNO" (N counts
// from 1). A lease a sandbox holds on a host file makes the host's opens
// of it wait for the lease to break (hostile case 41's class: a kernel
// surface that reaches past the sandbox).
func leases(files []string) {
	for i, f := range files {
		fd, err := unix.Open(f, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, "probe lease:", err)
			os.Exit(1)
		}
		for _, l := range []struct {
			name string
			typ  int
		}{{"rd", unix.F_RDLCK}, {"wr", unix.F_WRLCK}} {
			_, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, l.typ)
			var errno unix.Errno
			if err != nil && !errors.As(err, &errno) {
				errno = unix.EINVAL
			}
			fmt.Fprintf(os.Stdout, "lease_%s_%d %d\n", l.name, i+1, errno)
			if err == nil {
				unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK)
			}
		}
		unix.Close(fd)
	}
}

// Preallocation ioctls from XFS, which the VFS answers for any regular
// file (linux/fs.h; struct space_resv is 48 bytes on x86_64 and aarch64).
const (
	fsIOCResvsp    = 0x40305828 // FS_IOC_RESVSP
	fsIOCResvsp64  = 0x4030582a // FS_IOC_RESVSP64
	fsIOCZeroRange = 0x40305839 // FS_IOC_ZERO_RANGE
)

// prealloc creates file and tries, on it, each way to allocate 1 GiB
// past its end without growing it: fallocate with FALLOC_FL_KEEP_SIZE
// and the preallocation ioctls. It prints "prealloc_NAME ERRNO" for each
// and "prealloc_blocks N", the bytes the file holds after them (it
// removes the file). None of them meets RLIMIT_FSIZE (hostile case 13).
func prealloc(file string) {
	fd, err := unix.Open(file, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe prealloc:", err)
		os.Exit(1)
	}
	defer unix.Unlink(file)
	defer unix.Close(fd)
	const size = 1 << 30
	err = unix.Fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, 0, size)
	fmt.Fprintf(os.Stdout, "prealloc_fallocate_keep_size %d\n", errnoOf(err))
	// struct space_resv: l_type, l_whence (int16), l_start, l_len (int64),
	// l_sysid (int32), l_pid (uint32), l_pad[4] (int32).
	var resv [48]byte
	binary.NativeEndian.PutUint64(resv[16:], size)
	for _, c := range []struct {
		name string
		req  uintptr
	}{{"resvsp", fsIOCResvsp}, {"resvsp64", fsIOCResvsp64}, {"zero_range", fsIOCZeroRange}} {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), c.req, uintptr(unsafe.Pointer(&resv[0])))
		fmt.Fprintf(os.Stdout, "prealloc_%s %d\n", c.name, e)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		fmt.Fprintln(os.Stderr, "probe prealloc:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stdout, "prealloc_blocks %d\n", st.Blocks*512)
}
