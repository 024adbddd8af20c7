package seccomp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/testenv"
)

// The victim test installs the real filter in a child process and makes raw
// syscalls there, as gvisor's pkg/seccomp does. A filter cannot be removed,
// so the test binary re-executes itself (os/exec's helperCommand pattern):
//
//	parent (TestFilterInKernel)            child (TestVictim, env victimEnv=mode)
//	  exec os.Args[0] -test.run=^TestVictim$ ──▶ start locked threads
//	                                            mode "filter": Install(Options{})
//	                                            run each probe, print "probe NAME ERRNO"
//	                                            run /bin/cat /proc/self/status, print its Seccomp
//	                                            print "tasks N filtered M"
//	  parse stdout, compare ◀────────────────── exit 0
//
// The child runs twice: once with the filter and once without ("control"),
// so the test also shows the kernel alone would have answered differently.

// victimEnv marks the child role and names its mode.
const victimEnv = "AIRLOCK_SECCOMP_VICTIM"

// A probe is one raw syscall and the errno the filter must produce.
type probe struct {
	name string
	call func() syscall.Errno
	want syscall.Errno
	// kernelDiffers says the control run must see another errno, proving the
	// answer came from the filter.
	kernelDiffers bool
}

// badPtr is an address no mapping covers.
const badPtr = 8

func probes() []probe {
	sys := func(nr uintptr, args ...uintptr) func() syscall.Errno {
		return func() syscall.Errno {
			var a [6]uintptr
			copy(a[:], args)
			r, _, e := unix.Syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
			if e == 0 && isFD(nr) {
				unix.Close(int(r))
			}
			return e
		}
	}
	ps := []probe{
		{"io_uring_setup", sys(unix.SYS_IO_URING_SETUP, 4, badPtr), unix.EPERM, true},
		{"io_uring_enter", sys(426, 99, 0, 0, 0, 0, 0), unix.EPERM, true},
		{"unshare(CLONE_NEWUSER)", sys(unix.SYS_UNSHARE, unix.CLONE_NEWUSER), unix.EPERM, true},
		// CLONE_FS makes the kernel refuse with EINVAL before forking, so a
		// broken filter cannot fork this Go process.
		{"clone(CLONE_NEWUSER)", sys(unix.SYS_CLONE, unix.CLONE_NEWUSER|unix.CLONE_FS|uintptr(unix.SIGCHLD)), unix.EPERM, true},
		{"setns", sys(unix.SYS_SETNS, ^uintptr(0), 0), unix.EPERM, true},
		{"keyctl", sys(unix.SYS_KEYCTL, 9999), unix.EPERM, true},
		{"add_key", sys(unix.SYS_ADD_KEY, badPtr, badPtr, 0, 0, 0), unix.EPERM, true},
		{"bpf", sys(unix.SYS_BPF, 9999, 0, 0), unix.EPERM, true},
		{"perf_event_open", sys(unix.SYS_PERF_EVENT_OPEN, badPtr, 0, ^uintptr(0), ^uintptr(0), 0), unix.EPERM, true},
		{"ptrace(PTRACE_ATTACH)", sys(unix.SYS_PTRACE, unix.PTRACE_ATTACH, 0x7ffffff0), unix.EPERM, true},
		{"process_vm_readv", sys(unix.SYS_PROCESS_VM_READV, 0x7ffffff0, badPtr, 1, badPtr, 1, 0), unix.EPERM, true},
		{"mount", sys(unix.SYS_MOUNT, badPtr, badPtr, badPtr, 0, 0), unix.EPERM, true},
		{"fsopen", sys(unix.SYS_FSOPEN, badPtr, 0), unix.EPERM, true},
		{"open_tree", sys(unix.SYS_OPEN_TREE, ^uintptr(0), badPtr, 0), unix.EPERM, true},
		{"userfaultfd", sys(unix.SYS_USERFAULTFD, 0), unix.EPERM, true},
		{"open_by_handle_at", sys(unix.SYS_OPEN_BY_HANDLE_AT, ^uintptr(0), badPtr, 0), unix.EPERM, true},
		{"finit_module", sys(unix.SYS_FINIT_MODULE, ^uintptr(0), badPtr, 0), unix.EPERM, true},
		{"clone3", sys(unix.SYS_CLONE3, 0, 0), unix.ENOSYS, true},
		{"personality(ADDR_NO_RANDOMIZE)", sys(unix.SYS_PERSONALITY, 0x0040000), unix.EPERM, true},
		{"personality(query)", sys(unix.SYS_PERSONALITY, 0xffffffff), 0, false},
		// The child's stdin is /dev/null, so the kernel says ENOTTY.
		{"ioctl(TIOCSTI)", sys(unix.SYS_IOCTL, 0, unix.TIOCSTI, badPtr), unix.EPERM, true},
		{"ioctl(TIOCSTI|high bits)", sys(unix.SYS_IOCTL, 0, uintptr(0xffffffff00000000|uint64(unix.TIOCSTI)), badPtr), unix.EPERM, true},
		{"ioctl(TIOCLINUX)", sys(unix.SYS_IOCTL, 0, unix.TIOCLINUX, badPtr), unix.EPERM, true},
		{"ioctl(TIOCSETD)", sys(unix.SYS_IOCTL, 0, unix.TIOCSETD, badPtr), unix.EPERM, true},
		{"ioctl(FS_IOC_SETFLAGS)", sys(unix.SYS_IOCTL, 0, unix.FS_IOC_SETFLAGS, badPtr), unix.EPERM, true},
		// stdin is no regular file: the kernel says ENOTTY.
		{"ioctl(FS_IOC_RESVSP64)", sys(unix.SYS_IOCTL, 0, ioctlFSResvsp64, badPtr), unix.EOPNOTSUPP, true},
		{"ioctl(FS_IOC_ADD_ENCRYPTION_KEY)", sys(unix.SYS_IOCTL, 0, ioctlFscryptAddKey, badPtr), unix.EOPNOTSUPP, true},
		{"ioctl(BTRFS_IOC_SNAP_CREATE_V2)", sys(unix.SYS_IOCTL, 0, ioctlBtrfsSnapCreateV2, badPtr), unix.EPERM, true},
		{"socket(AF_NETLINK)", sys(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE), unix.EAFNOSUPPORT, true},
		{"socket(AF_PACKET)", sys(unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_RAW, 0), unix.EAFNOSUPPORT, true},
		{"socket(AF_INET)", sys(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0), 0, false},
		{"socket(AF_INET6)", sys(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_DGRAM, 0), 0, false},
		{"socket(AF_INET, TCP)", sys(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_TCP), 0, false},
		// A protocol a module would bring: the kernel without the filter
		// says ESOCKTNOSUPPORT here (no DCCP); SCTP and L2TP, which it
		// lacks as well, answer what the filter does, so only the BPF
		// interpreter's cases tell those apart.
		{"socket(AF_INET6, DCCP)", sys(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_DCCP, unix.IPPROTO_DCCP), unix.EPROTONOSUPPORT, true},
		{"socket(AF_INET, SCTP)", sys(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP), unix.EPROTONOSUPPORT, false},
		{"socket(AF_UNIX)", sys(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM, 0), 0, false},
		{"socketpair(AF_UNIX)", socketpair, 0, false},
		{"getpid", sys(unix.SYS_GETPID), 0, false},
		// A host without a huge page pool says ENOMEM as well, so only
		// the BPF interpreter's cases tell those apart.
		{"mmap(MAP_HUGETLB)", sys(unix.SYS_MMAP, 0, 2<<20, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_HUGETLB, ^uintptr(0), 0), unix.ENOMEM, false},
		{"memfd_create(MFD_HUGETLB)", sys(unix.SYS_MEMFD_CREATE, badPtr, unix.MFD_HUGETLB), unix.ENOMEM, true},
		{"openat2", sys(unix.SYS_OPENAT2, ^uintptr(0), badPtr, badPtr, 24), unix.ENOSYS, true},
		{"fchmodat(S_ISUID)", onNewFile(func(p *byte) syscall.Errno {
			_, _, e := unix.Syscall6(unix.SYS_FCHMODAT, ^uintptr(99), uintptr(unsafe.Pointer(p)), 0o4755, 0, 0, 0)
			return e
		}), unix.EPERM, true},
		{"fchmodat(0755)", onNewFile(func(p *byte) syscall.Errno {
			_, _, e := unix.Syscall6(unix.SYS_FCHMODAT, ^uintptr(99), uintptr(unsafe.Pointer(p)), 0o755, 0, 0, 0)
			return e
		}), 0, false},
		{"openat(O_CREAT,S_ISGID)", onNewName(func(p *byte) syscall.Errno {
			r, _, e := unix.Syscall6(unix.SYS_OPENAT, ^uintptr(99), uintptr(unsafe.Pointer(p)), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o2755, 0, 0)
			if e == 0 {
				unix.Close(int(r))
			}
			return e
		}), unix.EPERM, true},
	}
	if runtime.GOARCH == "amd64" {
		// x32 getpid: the kernel may or may not have x32; the filter says ENOSYS.
		ps = append(ps, probe{"x32 getpid", sys(0x40000000 | unix.SYS_GETPID), unix.ENOSYS, false})
	}
	return ps
}

// onNewFile returns a probe that runs call on the absolute path of a new
// empty file, removed after. ^uintptr(99) is AT_FDCWD (-100).
func onNewFile(call func(path *byte) syscall.Errno) func() syscall.Errno {
	return onNewName(func(p *byte) syscall.Errno {
		fd, err := unix.Open(unix.BytePtrToString(p), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		var errno syscall.Errno
		if errors.As(err, &errno) {
			return errno
		} else if err != nil {
			return unix.EIO
		}
		unix.Close(fd)
		return call(p)
	})
}

// onNewName returns a probe that runs call on the absolute path of a name
// that does not exist, removed after.
func onNewName(call func(path *byte) syscall.Errno) func() syscall.Errno {
	return func() syscall.Errno {
		dir, err := os.MkdirTemp("", "victim")
		if err != nil {
			return unix.EIO
		}
		defer os.RemoveAll(dir)
		p, err := unix.BytePtrFromString(filepath.Join(dir, "f"))
		if err != nil {
			return unix.EINVAL
		}
		return call(p)
	}
}

// isFD says whether a successful nr returns a file descriptor to close.
func isFD(nr uintptr) bool {
	switch nr {
	case unix.SYS_SOCKET, unix.SYS_IO_URING_SETUP, unix.SYS_USERFAULTFD, unix.SYS_FSOPEN,
		unix.SYS_OPEN_TREE, unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_PERF_EVENT_OPEN:
		return true
	}
	return false
}

// socketpair makes an AF_UNIX pair with a raw syscall and closes it.
func socketpair() syscall.Errno {
	var fds [2]int32
	_, _, e := unix.RawSyscall6(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_STREAM, 0, uintptr(unsafe.Pointer(&fds)), 0, 0)
	if e == 0 {
		unix.Close(int(fds[0]))
		unix.Close(int(fds[1]))
	}
	return e
}

// TestVictim is the child half of TestFilterInKernel; run directly, it skips.
func TestVictim(t *testing.T) {
	mode := os.Getenv(victimEnv)
	if mode == "" {
		t.Skip("helper process for TestFilterInKernel")
	}
	// Threads that exist before Install must be covered by TSYNC too.
	block := make(chan struct{})
	for range 4 {
		go func() {
			runtime.LockOSThread()
			<-block
		}()
	}
	if mode == "filter" {
		if err := Install(Options{}); err != nil {
			fmt.Printf("install %v\n", err)
			os.Exit(3)
		}
	}
	for _, p := range probes() {
		fmt.Printf("probe %s %d\n", strings.ReplaceAll(p.name, " ", "_"), int(p.call()))
	}
	out, err := exec.Command("/bin/cat", "/proc/self/status").Output()
	if err != nil {
		fmt.Printf("exec %v\n", err)
	} else {
		fmt.Printf("exec ok seccomp=%s\n", statusField(out, "Seccomp"))
	}
	tasks, filtered := 0, 0
	paths, _ := filepath.Glob("/proc/self/task/*/status")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread exited
		}
		tasks++
		if statusField(b, "Seccomp") == "2" && statusField(b, "NoNewPrivs") == "1" {
			filtered++
		}
	}
	fmt.Printf("tasks %d filtered %d\n", tasks, filtered)
	close(block)
	os.Exit(0)
}

// statusField returns a field of a /proc/*/status file.
func statusField(status []byte, name string) string {
	s := bufio.NewScanner(bytes.NewReader(status))
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// victimReport is what one child run printed.
type victimReport struct {
	errnos   map[string]syscall.Errno
	exec     string
	tasks    int
	filtered int
}

// runVictim runs the child in the given mode and parses its report.
func runVictim(t *testing.T, mode string) victimReport {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestVictim$", "-test.count=1")
	cmd.Env = append(os.Environ(), victimEnv+"="+mode)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("victim (%s): %v\nstdout:\n%s\nstderr:\n%s", mode, err, out, stderr.Bytes())
	}
	r := victimReport{errnos: make(map[string]syscall.Errno)}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "probe":
			n, err := strconv.Atoi(f[2])
			if err != nil {
				t.Fatalf("victim (%s) printed %q", mode, line)
			}
			r.errnos[f[1]] = syscall.Errno(n)
		case len(f) >= 1 && f[0] == "exec":
			r.exec = strings.TrimSpace(strings.TrimPrefix(line, "exec"))
		case len(f) == 4 && f[0] == "tasks":
			r.tasks, _ = strconv.Atoi(f[1])
			r.filtered, _ = strconv.Atoi(f[3])
		}
	}
	return r
}

func TestFilterInKernel(t *testing.T) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil || statusField(status, "Seccomp") == "" {
		testenv.RequireFeature(t, "the kernel has no seccomp (no Seccomp field in /proc/self/status)")
	}
	if NativeArch() == "" {
		testenv.RequireFeature(t, "no filter for GOARCH="+runtime.GOARCH)
	}
	filtered := runVictim(t, "filter")
	control := runVictim(t, "control")

	for _, p := range probes() {
		key := strings.ReplaceAll(p.name, " ", "_")
		got, ok := filtered.errnos[key]
		if !ok {
			t.Errorf("%s: the victim printed no result", p.name)
			continue
		}
		t.Logf("%-32s filter %-40v control %v", p.name, got, control.errnos[key])
		if got != p.want {
			t.Errorf("%s under the filter: errno %d (%v), want %d (%v)", p.name, int(got), got, int(p.want), p.want)
		}
		if c := control.errnos[key]; p.kernelDiffers && c == p.want {
			t.Errorf("%s without the filter: errno %d (%v) too, so the test cannot tell the filter answered", p.name, int(c), c)
		}
	}
	if filtered.exec != "ok seccomp=2" {
		t.Errorf("os/exec under the filter: %q, want %q (the child ran and inherited the filter)", filtered.exec, "ok seccomp=2")
	}
	if control.exec != "ok seccomp=0" {
		t.Errorf("os/exec without the filter: %q, want %q", control.exec, "ok seccomp=0")
	}
	t.Logf("%d of %d threads filtered", filtered.filtered, filtered.tasks)
	if filtered.tasks < 5 || filtered.filtered != filtered.tasks {
		t.Errorf("%d of %d threads have the filter and no_new_privs, want all of at least 5", filtered.filtered, filtered.tasks)
	}
}
