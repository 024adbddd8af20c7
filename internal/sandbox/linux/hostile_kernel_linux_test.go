package linux_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
	"github.com/airlockhq/airlock/internal/testenv"
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

// Case 38: the init's binary cannot be written, and the binary on disk is
// unchanged: through the detached read-only overlay a broker that may
// mount uses (root here), and through the sealed memfd copy of one that
// may not (unprivileged). From inside, /proc/1/exe is refused (the init is
// not dumpable); from the host, the broker's user keeps a handle on the running init's
// executable and, once the sandbox is gone, tries to write through it, as
// CVE-2019-5736 does from inside a container. The separately built init
// (cmd/airlock-init) is sealed the same way.
func TestHostile38OverwriteExe(t *testing.T) {
	overlay := backend(t)
	copied, err := linux.NewCopySealed(&linux.Options{Executable: os.Args[0], Cgroups: linux.CgroupsOptional})
	if err != nil {
		t.Fatalf("New with a copied binary: %v", err)
	}
	separate := separateInitExe(t)
	separateB, err := linux.New(&linux.Options{Executable: separate, Cgroups: linux.CgroupsOptional})
	if err != nil {
		t.Fatalf("New with %s: %v", linux.InitCommand, err)
	}
	memfd, ovl, sep := "/memfd:airlock (deleted)", "/"+filepath.Base(os.Args[0]), "/"+linux.InitCommand
	if os.Geteuid() != 0 { // an unprivileged broker may not mount: it copies
		ovl, sep = memfd, memfd
	}
	for _, tc := range []struct {
		name string
		b    *linux.Backend
		path string // the binary on disk
		exe  string // what the init's /proc/PID/exe names
	}{
		{"default", overlay, os.Args[0], ovl},
		{"memfd", copied, os.Args[0], memfd},
		{"separate init", separateB, separate, sep},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := sha(t, tc.path)
			o := runOn(t, tc.b, `(exec 3</proc/1/exe) 2>&1; for i in 1 2 3; do (echo evil >/proc/1/exe) 2>&1; done; (readlink /proc/1/exe) 2>&1; echo done`)
			if !strings.Contains(o.stdout, "done") || strings.Count(o.stdout, "Permission denied") < 4 {
				t.Fatalf("inside: want every open of /proc/1/exe refused, got %q %q", o.stdout, o.stderr)
			}
			{
				werr := unix.EPERM // the memfd's seals
				if tc.exe != memfd {
					werr = unix.EROFS // the overlay
				}
				exe, link := initExe(t, tc.b)
				defer exe.Close()
				if link != tc.exe {
					t.Errorf("the init runs %q, want %q", link, tc.exe)
				}
				self := "/proc/self/fd/" + strconv.Itoa(int(exe.Fd()))
				if w, err := os.OpenFile(self, os.O_WRONLY, 0); err != nil {
					if !errors.Is(err, werr) {
						t.Errorf("opening the init's binary for writing: %v, want %v", err, werr)
					}
				} else {
					_, err := w.Write([]byte("evil"))
					w.Close()
					if !errors.Is(err, werr) {
						t.Errorf("writing the init's binary: %v, want %v", err, werr)
					}
				}
				if head, err := os.ReadFile(self); err != nil || !bytes.HasPrefix(head, []byte("\x7fELF")) {
					t.Errorf("the init's binary after the writes: %.8q, %v; want the ELF header", head, err)
				}
			}
			if after := sha(t, tc.path); after != before {
				t.Fatal("the binary changed")
			}
		})
	}
}

// initExe runs a sandbox on b and, while it runs, opens its init's
// executable (O_PATH, as /proc/PID/exe gives it) from the host; it returns
// once the sandbox has ended, with the handle and what the link names.
func initExe(t *testing.T, b *linux.Backend) (*os.File, string) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer pw.Close()
		// Ended by cancel: the error is expected.
		_, _ = b.Run(ctx, &sandbox.Spec{Command: []string{"/bin/sh", "-c", "echo up; exec sleep 600"}, Stdout: pw,
			Env: []string{"PATH=/usr/bin:/bin"}, Limits: sandbox.Limits{Wall: time.Minute, AllowUnenforced: acceptUnenforced}})
	}()
	if line, err := bufio.NewReader(pr).ReadString('\n'); line != "up\n" {
		t.Fatalf("the sandbox did not start: %q %v", line, err)
	}
	var exe *os.File
	var link string
	for _, pid := range children(t) {
		l, err := os.Readlink("/proc/" + pid + "/exe")
		if err != nil || !strings.HasPrefix(l, "/memfd:airlock") && filepath.Base(l) != filepath.Base(os.Args[0]) && filepath.Base(l) != linux.InitCommand {
			continue
		}
		if exe, err = os.OpenFile("/proc/"+pid+"/exe", unix.O_PATH, 0); err == nil {
			link = l
			break
		}
	}
	cancel()
	<-done
	if exe == nil {
		t.Fatal("no sandbox init among the test's children")
	}
	return exe, link
}

// children lists the test process's child processes.
func children(t *testing.T) []string {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, task := range tasks {
		b, _ := os.ReadFile("/proc/self/task/" + task.Name() + "/children")
		pids = append(pids, strings.Fields(string(b))...)
	}
	return pids
}

// runOn runs a shell script on backend b.
func runOn(t *testing.T, b *linux.Backend, script string) out {
	t.Helper()
	var so, se bytes.Buffer
	spec := &sandbox.Spec{Command: []string{"/bin/sh", "-c", script}, Stdout: &so, Stderr: &se,
		Env: []string{"PATH=/usr/bin:/bin"}, Limits: sandbox.Limits{Wall: 30 * time.Second, AllowUnenforced: acceptUnenforced}}
	res, err := b.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out{res: res, stdout: so.String(), stderr: se.String()}
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

// TestRootOnlyProcFilesMasked: every file at the top of /proc that only
// root may read (kpageflags, slabinfo, vmallocinfo, ...: the host
// kernel's memory and state) reads as empty in the sandbox, whose uid 0
// is host root under a root broker (red team).
func TestRootOnlyProcFilesMasked(t *testing.T) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	var files []string
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() || info.Mode().Perm()&0o004 != 0 || e.Name() == "kmsg" {
			continue // kmsg blocks a reader with nothing to read: checked below by its mount
		}
		files = append(files, "/proc/"+e.Name())
	}
	if len(files) == 0 {
		t.Skip("no root-only files at the top of /proc")
	}
	script := ""
	for _, f := range files {
		script += fmt.Sprintf("printf '%%s %%s\\n' %s \"$(head -c 64 %s 2>/dev/null | wc -c)\"; ", f, f)
	}
	script += "grep -c ' /proc/kmsg ' /proc/self/mountinfo"
	o := sh(t, script)
	lines := strings.Split(strings.TrimSpace(o.stdout), "\n")
	if len(lines) != len(files)+1 {
		t.Fatalf("output %q (stderr %q)", o.stdout, o.stderr)
	}
	for _, line := range lines[:len(files)] {
		if f := strings.Fields(line); len(f) != 2 || f[1] != "0" {
			t.Errorf("the sandbox read a root-only /proc file: %s bytes", line)
		}
	}
	if _, err := os.Stat("/proc/kmsg"); err == nil && lines[len(files)] != "1" {
		t.Errorf("/proc/kmsg is not masked: %q", lines[len(files)])
	}
}

// TestNoRaisedSchedulingPriority: a sandbox may not raise its scheduling
// priority, whatever the broker's own limits allow (RLIMIT_RTPRIO and
// RLIMIT_NICE of an audio group's user would let SCHED_FIFO starve the
// host). It can fail only where the broker runs with either above 0.
func TestNoRaisedSchedulingPriority(t *testing.T) {
	o := sh(t, "grep -E '^Max (nice|realtime) priority' /proc/self/limits")
	lines := strings.Split(strings.TrimSpace(o.stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("limits %q (stderr %q)", o.stdout, o.stderr)
	}
	for _, line := range lines {
		if f := strings.Fields(line); len(f) < 5 || f[3] != "0" || f[4] != "0" {
			t.Errorf("the sandbox's limit %q, want 0 and 0", line)
		}
	}
}

// TestPerUserKernelCountsBounded: kernel objects the kernel counts per
// user (inotify instances and watches, fanotify groups and marks, queued
// signals, user namespaces) are bounded in the sandbox's own user
// namespace, and kernel AIO, one pool for the whole machine, is refused:
// the sandbox's uid 0 is the broker's host user, whose allowance, or the
// machine's, a sandbox used up before (red team).
func TestPerUserKernelCountsBounded(t *testing.T) {
	o := sh(t, "cat /proc/sys/user/max_inotify_instances /proc/sys/user/max_inotify_watches /proc/sys/user/max_user_namespaces; grep '^Max pending signals' /proc/self/limits")
	// (At most peruser's values: less when the user's own limits are low,
	// or other sandboxes hold their share: see userCounts.)
	f := strings.Fields(o.stdout)
	within := func(s string, max int) bool { n, err := strconv.Atoi(s); return err == nil && n >= 1 && n <= max }
	if len(f) < 9 || !within(f[0], 32) || !within(f[1], 65536) || f[2] != "0" || f[6] != "1024" || f[7] != "1024" {
		t.Errorf("counts in the sandbox: %q (stderr %q); want at most 32 and 65536 (and some), 0 and a signal limit of 1024", o.stdout, o.stderr)
	}
	needPython(t)
	nr := map[string]int{"amd64": 206, "arm64": 0}[runtime.GOARCH]
	o = sh(t, fmt.Sprintf(`python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
ctx = ctypes.c_ulong(0)
r = libc.syscall(%d, 8, ctypes.byref(ctx))
print(r, ctypes.get_errno())
n = 0
try:
    while n < 100:
        fd = libc.inotify_init1(0)
        if fd < 0:
            break
        n += 1
except Exception:
    pass
print(n)
'`, nr))
	lines := strings.Split(strings.TrimSpace(o.stdout), "\n")
	if len(lines) != 2 || lines[0] != "-1 1" {
		t.Errorf("io_setup in the sandbox: %q (stderr %q); want -1 and EPERM", o.stdout, o.stderr)
	}
	if len(lines) == 2 {
		if n, _ := strconv.Atoi(lines[1]); n < 1 || n > 32 {
			t.Errorf("the sandbox made %s inotify instances; want at most 32", lines[1])
		}
	}
}

// fscrypt ioctls (linux/fscrypt.h) and what they carry.
const (
	fscryptAddKey       = 0xc0506617 // FS_IOC_ADD_ENCRYPTION_KEY
	fscryptKeyStatus    = 0xc080661a // FS_IOC_GET_ENCRYPTION_KEY_STATUS
	fscryptSpecID       = 2          // FSCRYPT_KEY_SPEC_TYPE_IDENTIFIER
	fscryptStatusAbsent = 1          // FSCRYPT_KEY_STATUS_ABSENT
)

// fscryptKeyOf adds a 64-byte key of b bytes to the file system of dir,
// from the host, and returns its identifier.
func fscryptKeyOf(t *testing.T, dir string, b byte) [16]byte {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// struct fscrypt_add_key_arg: key_spec {type, reserved, u[32]},
	// raw_size, key_id, reserved[8], then raw.
	buf := make([]byte, 80+64)
	binary.NativeEndian.PutUint32(buf[0:], fscryptSpecID)
	binary.NativeEndian.PutUint32(buf[40:], 64)
	for i := 80; i < len(buf); i++ {
		buf[i] = b
	}
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), fscryptAddKey, uintptr(unsafe.Pointer(&buf[0]))); e != 0 {
		testenv.RequireFeature(t, fmt.Sprintf("fscrypt on a loop-mounted ext4 (-O encrypt): adding a key: %v", e))
	}
	var id [16]byte
	copy(id[:], buf[8:24])
	return id
}

// fscryptStatus returns the status (FSCRYPT_KEY_STATUS_*) of the key id
// on the file system of dir, as the host sees it.
func fscryptStatus(t *testing.T, dir string, id [16]byte) uint32 {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 128) // struct fscrypt_get_key_status_arg
	binary.NativeEndian.PutUint32(buf[0:], fscryptSpecID)
	copy(buf[8:24], id[:])
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), fscryptKeyStatus, uintptr(unsafe.Pointer(&buf[0]))); e != 0 {
		t.Fatalf("FS_IOC_GET_ENCRYPTION_KEY_STATUS: %v", e)
	}
	return binary.NativeEndian.Uint32(buf[64:])
}

// Case 41's class: the file system's encryption keys (fscrypt) are kernel
// keys as keyctl's are, held by the file system, not by any namespace, and
// charged to the user's key quota (200 keys for a user other than root).
// A sandbox with a grant on a file system with encryption (ext4 or f2fs
// made with it, as ChromeOS and Android do and fscrypt(1) sets up) may
// neither add one, which outlives the sandbox until the file system is
// unmounted, nor remove the key its user added for an encrypted directory,
// which locks that directory on the host.
func TestFscryptKeys(t *testing.T) {
	needPython(t)
	if os.Geteuid() != 0 {
		t.Skip("a loop mount needs root")
	}
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		testenv.RequireFeature(t, "mkfs.ext4 (e2fsprogs) for an ext4 with encryption to test on")
	}
	img := filepath.Join(t.TempDir(), "fs.img")
	if out, err := exec.Command(mkfs, "-q", "-F", "-O", "encrypt", img, "16M").CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v\n%s", err, out)
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		testenv.RequireFeature(t, fmt.Sprintf("a loop mount: %v: %s", err, out))
	}
	defer exec.Command("umount", "-l", mnt).Run()
	hostKey := fscryptKeyOf(t, mnt, 5)
	script := `import fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
add = bytearray(struct.pack("=II32sII32s", 2, 0, b"", 64, 0, b"") + b"\x07" * 64)
try:
    fcntl.ioctl(fd, 0xc0506617, add)
    print("add 0", add[8:24].hex())
except OSError as e:
    print("add", e.errno)
rm = bytearray(struct.pack("=II32s24s", 2, 0, bytes.fromhex(sys.argv[2]), b""))
try:
    fcntl.ioctl(fd, 0xc0406618, rm)
    print("remove 0")
except OSError as e:
    print("remove", e.errno)
`
	o := run(t, &sandbox.Spec{
		Mounts:  []sandbox.Mount{{Source: mnt, Writable: true}},
		Command: []string{"/usr/bin/python3", "-c", script, mnt, hex.EncodeToString(hostKey[:])},
	})
	for _, line := range strings.Split(strings.TrimSpace(o.stdout), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[1] != "0" {
			continue
		}
		switch f[0] {
		case "add":
			var id [16]byte
			if b, err := hex.DecodeString(f[2]); err == nil {
				copy(id[:], b)
			}
			t.Errorf("the sandbox added an encryption key to the host's file system (status after it ended: %d, absent is %d)", fscryptStatus(t, mnt, id), fscryptStatusAbsent)
		case "remove":
			t.Errorf("the sandbox removed the key its user added on the host (status now %d, absent is %d)", fscryptStatus(t, mnt, hostKey), fscryptStatusAbsent)
		}
	}
	if !strings.Contains(o.stdout, "add ") || !strings.Contains(o.stdout, "remove ") {
		t.Fatalf("the probe did not run: %q %q", o.stdout, o.stderr)
	}
	if st := fscryptStatus(t, mnt, hostKey); st == fscryptStatusAbsent {
		t.Errorf("the host's key is gone")
	}
}

// Case 2's class (a denied path read another way), through the file
// system's own tree operations, which ignore the sandbox's mounts: a btrfs
// snapshot (BTRFS_IOC_SNAP_CREATE, _V2) copies a whole subvolume, paths
// the sandbox has masked included, and needs only that the caller own the
// subvolume, which the sandbox's user does for the trees it is granted. A
// grant whose root is a btrfs subvolume (a project made as one, a
// container's tree) must not yield its denied files through a snapshot
// into a read-write grant.
func TestBtrfsSnapshotOfGrant(t *testing.T) {
	needPython(t)
	if os.Geteuid() != 0 {
		t.Skip("a loop mount needs root")
	}
	mkfs, err := exec.LookPath("mkfs.btrfs")
	if err != nil {
		testenv.RequireFeature(t, "mkfs.btrfs (btrfs-progs) for a btrfs to test on")
	}
	img := filepath.Join(t.TempDir(), "fs.img")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	err = f.Truncate(128 << 20)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(mkfs, "-q", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.btrfs: %v\n%s", err, out)
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		testenv.RequireFeature(t, fmt.Sprintf("a loop mount of btrfs: %v: %s", err, out))
	}
	defer exec.Command("umount", "-l", mnt).Run()
	// The grant is a subvolume: BTRFS_IOC_SUBVOL_CREATE on mnt, named proj.
	proj := filepath.Join(mnt, "proj")
	mf, err := os.Open(mnt)
	if err != nil {
		t.Fatal(err)
	}
	args := make([]byte, 4096) // struct btrfs_ioctl_vol_args {s64 fd; char name[4088]}
	copy(args[8:], "proj")
	_, _, e := unix.Syscall(unix.SYS_IOCTL, mf.Fd(), 0x5000940e, uintptr(unsafe.Pointer(&args[0])))
	mf.Close()
	if e != 0 {
		t.Fatalf("BTRFS_IOC_SUBVOL_CREATE: %v", e)
	}
	const canary = "btrfs-masked-canary"
	if err := os.WriteFile(filepath.Join(proj, ".env"), []byte(canary), 0o600); err != nil {
		t.Fatal(err)
	}
	script := `import fcntl, os, struct, sys
src = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
for name, req in (("v1", 0x50009401), ("v2", 0x50009417)):
    if name == "v1":
        args = bytearray(struct.pack("=q4088s", src, b"snap1"))
    else:
        # struct btrfs_ioctl_vol_args_v2 {s64 fd; u64 transid; u64 flags; u64 unused[4]; char name[4040]}
        args = bytearray(struct.pack("=qqq32s4040s", src, 0, 0, b"", b"snap2"))
    try:
        fcntl.ioctl(src, req, args)
        print("snapshot", name, 0)
    except OSError as e:
        print("snapshot", name, e.errno)
    try:
        print("read", open(os.path.join(sys.argv[1], "snap" + name[1], ".env")).read())
    except OSError as e:
        print("read", name, e.errno)
`
	o := run(t, &sandbox.Spec{
		Mounts:  []sandbox.Mount{{Source: proj, Writable: true}},
		Masks:   []string{filepath.Join(proj, ".env")},
		Command: []string{"/usr/bin/python3", "-c", script, proj},
	})
	if strings.Contains(o.stdout, canary) {
		t.Errorf("a snapshot of the grant showed its masked file: %q", o.stdout)
	}
	if strings.Count(o.stdout, "snapshot v") != 2 {
		t.Fatalf("the probe did not run: %q %q", o.stdout, o.stderr)
	}
	for _, v := range []string{"v1", "v2"} {
		if strings.Contains(o.stdout, "snapshot "+v+" 0") {
			t.Errorf("the sandbox made a snapshot (%s) of its grant: %q", v, o.stdout)
		}
	}
}

// hugePagesFree returns HugePages_Free and HugePages_Total from
// /proc/meminfo.
func hugePagesFree(t *testing.T) (free, total int) {
	t.Helper()
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "HugePages_Free:" {
			free, _ = strconv.Atoi(f[1])
		}
		if len(f) == 2 && f[0] == "HugePages_Total:" {
			total, _ = strconv.Atoi(f[1])
		}
	}
	return free, total
}

// Case 12's class: memory from the host's huge page pool (vm.nr_hugepages
// and its surplus, vm.nr_overcommit_hugepages) is charged to no memory
// cgroup, so a sandbox that mapped it was bounded by nothing but the pool:
// it took every huge page a host keeps for its databases, DPDK or VMs,
// past its own memory limit, for as long as it lived. mmap with
// MAP_HUGETLB, memfd_create with MFD_HUGETLB and shmget with SHM_HUGETLB
// (which host gid 0, a root broker's sandbox's, may use: the default
// vm.hugetlb_shm_group) are answered ENOMEM, as a host with an empty pool
// answers them. Without a pool on the host, a root test makes one of two
// pages for the test's length.
func TestHugePagesRefused(t *testing.T) {
	needPython(t)
	if free, total := hugePagesFree(t); free < 2 {
		if os.Geteuid() != 0 {
			testenv.RequireFeature(t, "two free huge pages (vm.nr_hugepages), or root to reserve them")
		}
		const knob = "/proc/sys/vm/nr_hugepages"
		if err := os.WriteFile(knob, []byte(strconv.Itoa(total+2)), 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := os.WriteFile(knob, []byte(strconv.Itoa(total)), 0); err != nil {
				t.Errorf("restoring %s to %d: %v", knob, total, err)
			}
		})
		if free, _ := hugePagesFree(t); free < 2 {
			testenv.RequireFeature(t, "two free huge pages (the kernel could not reserve them)")
		}
	}
	free, _ := hugePagesFree(t)
	o := sh(t, `python3 -c '
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
huge = 2 << 20
def mapped(p):
    if p is None or p == ctypes.c_void_p(-1).value:
        return ctypes.get_errno()
    ctypes.memset(p, 1, huge)
    return 0
ctypes.set_errno(0)
print("mmap", mapped(libc.mmap(None, huge, 3, 0x22 | 0x40000, -1, 0)))
ctypes.set_errno(0)
fd = libc.memfd_create(b"h", 4)
if fd < 0:
    print("memfd", ctypes.get_errno())
else:
    libc.ftruncate(fd, huge)
    print("memfd", mapped(libc.mmap(None, huge, 3, 1, fd, 0)))
ctypes.set_errno(0)
r = libc.shmget(0, huge, 0o1000 | 0o4000 | 0o600)
print("shmget", 0 if r >= 0 else ctypes.get_errno())
import sys
sys.stdout.flush()
'`)
	want := "mmap 12\nmemfd 12\nshmget 12"
	if got := strings.TrimSpace(o.stdout); got != want {
		t.Errorf("huge pages in the sandbox (host had %d free): %q (stderr %q); want each refused with ENOMEM:\n%s", free, got, o.stderr, want)
	}
}
