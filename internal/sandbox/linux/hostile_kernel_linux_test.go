package linux_test

import (
	"crypto/sha256"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// probe runs raw syscalls through python's ctypes and returns "name errno"
// lines (errno 0 means the call succeeded).
func probe(t *testing.T, calls map[string]string) map[string]string {
	t.Helper()
	needPython(t)
	if runtime.GOARCH != "amd64" {
		t.Skip("syscall numbers below are x86_64 (not a kernel feature)")
	}
	var sb strings.Builder
	sb.WriteString("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall.restype = ctypes.c_long\n")
	for name, call := range calls {
		sb.WriteString("ctypes.set_errno(0)\nr = libc.syscall(" + call + ")\nprint('" + name + "', 0 if r >= 0 else ctypes.get_errno())\n")
	}
	o := run(t, &sandbox.Spec{Command: []string{"python3", "-c", sb.String()}})
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(o.stdout), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			got[f[0]] = f[1]
		}
	}
	if len(got) != len(calls) {
		t.Fatalf("probe output %q stderr %q", o.stdout, o.stderr)
	}
	return got
}

// Case 35: no nested user namespaces.
func TestHostile35NestedUserns(t *testing.T) {
	o := sh(t, "unshare -Ur true; echo rc=$?; unshare -Urn true; echo rc=$?")
	if strings.Contains(o.stdout, "rc=0") {
		t.Fatalf("unshare succeeded: %q %q", o.stdout, o.stderr)
	}
	got := probe(t, map[string]string{"clone_newuser": "56, 0x10000000|17, 0, 0, 0", "unshare_newuser": "272, 0x10000000"})
	for k, v := range got {
		if v != "1" {
			t.Errorf("%s: errno %s, want 1 (EPERM)", k, v)
		}
	}
}

// Case 36: the mount family is refused.
func TestHostile36MountFamily(t *testing.T) {
	d := newDirs(t)
	o := sh(t, "mount -t tmpfs x /tmp; echo rc=$?; mount --bind / "+d.W+"; echo rc=$?; umount /proc; echo rc=$?; chroot / true; echo rc=$?; pivot_root / /tmp; echo rc=$?", d.mounts()...)
	if strings.Contains(o.stdout, "rc=0") {
		t.Fatalf("a mount operation succeeded: %q %q", o.stdout, o.stderr)
	}
	got := probe(t, map[string]string{
		"fsopen": "430, b'tmpfs', 0", "open_tree": "428, -100, b'/', 1", "move_mount": "429, -100, b'/', -100, b'/tmp', 0",
		"mount_setattr": "442, -100, b'/', 0, 0, 0", "fsmount": "432, 99, 0, 0",
	})
	for k, v := range got {
		if v != "1" {
			t.Errorf("%s: errno %s, want 1 (EPERM)", k, v)
		}
	}
}

// Case 37: PID 1 cannot be entered, traced or written; CapEff is 0.
func TestHostile37ControlOfInit(t *testing.T) {
	o := sh(t, "nsenter -t 1 -a true; echo rc=$?; (exec 3<>/proc/1/mem) 2>&1; echo rc=$?; readlink /proc/1/fd/4 /proc/1/cwd /proc/1/root 2>&1; echo rc=$?; grep CapEff /proc/self/status")
	if strings.Contains(o.stdout, "rc=0") {
		t.Fatalf("access to PID 1 succeeded: %q %q", o.stdout, o.stderr)
	}
	if !strings.Contains(o.stdout, "CapEff:\t0000000000000000") {
		t.Fatalf("CapEff not 0: %q", o.stdout)
	}
	got := probe(t, map[string]string{"ptrace_attach": "101, 16, 1, 0, 0", "process_vm_writev": "311, 1, 0, 0, 0, 0, 0"})
	for k, v := range got {
		if v != "1" && v != "3" { // EPERM, or ESRCH
			t.Errorf("%s: errno %s, want EPERM", k, v)
		}
	}
}

func sha(t *testing.T, p string) [32]byte {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	io.Copy(h, f)
	var s [32]byte
	copy(s[:], h.Sum(nil))
	return s
}

// Case 38: /proc/1/exe (the init, a sealed memfd copy) cannot be written,
// and the binary on disk is unchanged.
func TestHostile38OverwriteExe(t *testing.T) {
	before := sha(t, os.Args[0])
	o := sh(t, `(exec 3</proc/1/exe) 2>&1; for i in 1 2 3; do (echo evil >/proc/1/exe) 2>&1; done; (readlink /proc/1/exe) 2>&1; echo done`)
	if !strings.Contains(o.stdout, "done") {
		t.Fatalf("output %q %q", o.stdout, o.stderr)
	}
	if after := sha(t, os.Args[0]); after != before {
		t.Fatal("the binary changed")
	}
	if b := sealedContent(t); strings.HasPrefix(b, "evil") {
		t.Fatal("the sealed copy changed")
	}
}

// sealedContent reads the start of the init binary via a second sandbox.
func sealedContent(t *testing.T) string {
	o := sh(t, "head -c 4 /proc/1/exe 2>/dev/null | od -c | head -1")
	return o.stdout
}

// Case 39: only fds 0-2 reach the payload; PID 1's fds are unreadable.
func TestHostile39LeakedFDs(t *testing.T) {
	o := sh(t, "ls /proc/$$/fd; echo ---; ls -l /proc/1/fd 2>&1 | grep -c -- '->'; (cd /proc/self/fd/3) 2>&1; echo rc=$?")
	parts := strings.SplitN(o.stdout, "---\n", 2)
	if got := strings.Fields(parts[0]); strings.Join(got, " ") != "0 1 2" {
		t.Fatalf("shell fds = %v, want 0 1 2 (stderr %q)", got, o.stderr)
	}
	// PID 1's fd numbers may be listed, but no link can be read.
	if len(parts) < 2 || strings.Contains(parts[1], "rc=0") || !strings.HasPrefix(parts[1], "0\n") {
		t.Fatalf("PID 1's fds or fd 3: %q", o.stdout)
	}
}

// Case 40: io_uring is refused by seccomp (EPERM, not EBADF).
func TestHostile40IOUring(t *testing.T) {
	got := probe(t, map[string]string{"io_uring_setup": "425, 4, 0", "io_uring_enter": "426, 99, 0, 0, 0, 0, 0", "io_uring_register": "427, 99, 0, 0, 0"})
	for k, v := range got {
		if v != "1" {
			t.Errorf("%s: errno %s, want 1", k, v)
		}
	}
}

// Case 41: the syscall sweep answers EPERM or ENOSYS.
func TestHostile41SyscallSweep(t *testing.T) {
	got := probe(t, map[string]string{
		"keyctl": "250, 0, 0, 0, 0, 0", "add_key": "248, 0, 0, 0, 0, 0", "request_key": "249, 0, 0, 0, 0",
		"bpf": "321, 0, 0, 0", "perf_event_open": "298, 0, 0, -1, -1, 0", "userfaultfd": "323, 0",
		"kexec_load": "246, 0, 0, 0, 0", "finit_module": "313, -1, 0, 0", "open_by_handle_at": "304, -1, 0, 0",
		"iopl": "172, 3", "swapon": "167, 0, 0", "syslog": "103, 3, 0, 0", "acct": "163, 0",
		"personality": "135, 0x0040000", "modify_ldt": "154, 0, 0, 0",
	})
	for k, v := range got {
		if v != "1" && v != "38" {
			t.Errorf("%s: errno %s, want EPERM or ENOSYS", k, v)
		}
	}
}

// Case 42: no privilege gain: nosuid, no_new_privs, no capabilities.
func TestHostile42SetuidAndCaps(t *testing.T) {
	o := sh(t, "grep -E '^(CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status; su -c id 2>&1; echo rc=$?; sudo -n id 2>&1; echo rc=$?; grep -c nosuid /proc/self/mountinfo")
	for _, want := range []string{"CapEff:\t0000000000000000", "CapPrm:\t0000000000000000", "CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("want %q in %q", want, o.stdout)
		}
	}
	if strings.Contains(o.stdout, "rc=0") {
		t.Errorf("su or sudo succeeded: %q", o.stdout)
	}
	// Every mount that holds executables is nosuid.
	o = sh(t, "awk '$5 ~ /^\\/(usr|tmp|proc|dev)/ && $6 !~ /nosuid/ {print}' /proc/self/mountinfo")
	if strings.TrimSpace(o.stdout) != "" {
		t.Errorf("mounts without nosuid: %q", o.stdout)
	}
}
