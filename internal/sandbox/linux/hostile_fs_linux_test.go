package linux_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// Case 1: lexical traversal. Unclean paths are refused before anything is
// opened, and "..": inside the sandbox reaches only the sandbox's own /etc.
func TestHostile01LexicalTraversal(t *testing.T) {
	d := newDirs(t)
	for _, m := range []sandbox.Mount{
		{Source: d.W + "/../o"}, {Source: d.W + "/./x"}, {Source: "//etc"}, {Source: "etc"}, {Source: d.W, Target: d.W + "/../../etc"},
	} {
		if _, err := tryRun(t, &sandbox.Spec{Mounts: []sandbox.Mount{m}, Command: []string{"true"}}); err == nil {
			t.Errorf("mount %+v: Run succeeded, want refusal", m)
		}
	}
	o := sh(t, "cat "+d.W+"/../../../../../../../etc/passwd; cat //etc/shadow; cat "+d.W+"/../o/canary", d.mounts()...)
	d.noCanary(t, o)
	if strings.Contains(o.stdout, "daemon:") || !strings.Contains(o.stdout, "root:x:0:0") {
		t.Fatalf("passwd is not the generated one: %q", o.stdout)
	}
	if !strings.Contains(o.stderr, "shadow") {
		t.Fatalf("reading /etc/shadow did not fail: %q", o.stderr)
	}
}

// Case 3: an ancestor symlink with a missing leaf creates nothing outside.
func TestHostile03AncestorSymlink(t *testing.T) {
	d := newDirs(t)
	before := snapshot(t, d.O)
	if err := os.Symlink(d.O, filepath.Join(d.W, "d")); err != nil {
		t.Fatal(err)
	}
	o := sh(t, "mkdir -p "+d.W+"/d/new/sub && echo x >"+d.W+"/d/new/sub/x.txt; cat "+d.W+"/d/canary", d.mounts()...)
	d.noCanary(t, o)
	if o.res.ExitCode == 0 {
		t.Fatalf("writing through the symlink succeeded: %+v", o)
	}
	if after := snapshot(t, d.O); after != before {
		t.Fatalf("O changed:\n%s\nwant\n%s", after, before)
	}
	// A grant whose source is (or passes through) a symlink is refused.
	for _, src := range []string{filepath.Join(d.W, "d"), filepath.Join(d.W, "d", "new")} {
		if _, err := tryRun(t, &sandbox.Spec{Mounts: []sandbox.Mount{{Source: src, Writable: true}}, Command: []string{"true"}}); err == nil {
			t.Errorf("grant through symlink %s accepted", src)
		}
	}
}

// Case 5: a hostile cwd is refused; a good one is where pwd -P says.
func TestHostile05HostileCwd(t *testing.T) {
	d := newDirs(t)
	if err := os.Symlink("/", filepath.Join(d.W, "link-to-root")); err != nil {
		t.Fatal(err)
	}
	for _, cwd := range []string{"/proc/self/fd/7", d.W + "/../..", d.W + "/link-to-root", "/", "/etc", "relative"} {
		_, err := tryRun(t, &sandbox.Spec{Mounts: d.mounts(), Cwd: cwd, Command: []string{"pwd"}})
		if err == nil {
			t.Errorf("cwd %q accepted", cwd)
		}
	}
	o := run(t, &sandbox.Spec{Mounts: d.mounts(), Cwd: d.W, Command: []string{"/bin/sh", "-c", "pwd -P"}})
	if strings.TrimSpace(o.stdout) != d.W {
		t.Fatalf("pwd -P = %q, want %q", o.stdout, d.W)
	}
}

// Case 6: every kind of write to a read-only grant fails.
func TestHostile06WritesToReadOnlyGrant(t *testing.T) {
	d := newDirs(t)
	before := snapshot(t, d.R)
	for _, cmd := range []string{
		"echo x >" + d.R + "/f",
		"truncate -s0 " + d.R + "/f",
		"touch " + d.R + "/n",
		"chmod 777 " + d.R + "/f",
		"mv " + d.R + "/f " + d.W + "/",
		"rm " + d.R + "/f",
		"mkdir " + d.R + "/dir",
		"ln -s /x " + d.R + "/l",
		"mount -o remount,rw " + d.R,
	} {
		t.Run(cmd, func(t *testing.T) {
			o := sh(t, "("+cmd+") 2>&1; echo rc=$?", d.mounts()...)
			if strings.Contains(o.stdout, "rc=0") {
				t.Fatalf("%s succeeded: %q", cmd, o.stdout)
			}
			if !strings.Contains(o.stdout, "Read-only file system") && !strings.Contains(o.stdout, "ermission denied") && !strings.Contains(o.stdout, "not permitted") {
				t.Fatalf("%s: want EROFS/EPERM/EACCES, got %q", cmd, o.stdout)
			}
		})
	}
	if after := snapshot(t, d.R); after != before {
		t.Fatalf("R changed:\n%s", after)
	}
}

// Case 7: a nested read-only grant swapped for a symlink between two runs
// is refused; no mount ever lands on the symlink's target, and it never
// becomes writable.
func TestHostile07NestedGrantSwapped(t *testing.T) {
	d := newDirs(t)
	git := filepath.Join(d.W, ".git")
	if err := os.MkdirAll(filepath.Join(git, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	mounts := []sandbox.Mount{{Source: d.W, Writable: true}, {Source: git}}
	// Dispatch 1: the sandbox tries the swap itself; .git is a read-only
	// mount point, so it fails.
	o := sh(t, "rm -rf "+git+"; ln -s "+d.O+" "+git+"; echo x >"+git+"/hooks/pre-commit", mounts...)
	if _, err := os.Lstat(filepath.Join(git, "hooks", "pre-commit")); err == nil {
		t.Fatalf("wrote into the ro .git: %+v", o)
	}
	if fi, err := os.Lstat(git); err != nil || !fi.IsDir() {
		t.Fatalf(".git replaced from inside: %v", err)
	}
	// Between dispatches something swaps it on the host.
	before := snapshot(t, d.O)
	if err := os.RemoveAll(git); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(d.O, git); err != nil {
		t.Fatal(err)
	}
	_, err := tryRun(t, &sandbox.Spec{Mounts: mounts, Command: []string{"/bin/sh", "-c", "echo pwned >" + git + "/canary"}})
	if err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("dispatch 2 with .git a symlink: err %v, want a refusal naming the symlink", err)
	}
	// A ReadOnly (protected) path inside the rw grant that became a
	// symlink is covered, not followed: the call runs, writes through it fail.
	o = run(t, &sandbox.Spec{Mounts: mounts[:1], ReadOnly: []string{git}, Env: []string{"PATH=/usr/bin:/bin"}, Command: []string{"/bin/sh", "-c", "echo pwned >" + git + "/canary; cat " + git + "/canary; rm -f " + git + "; true"}})
	d.noCanary(t, o)
	if l, err := os.Readlink(git); err != nil || l != d.O {
		t.Fatalf("the covered symlink changed on the host: %q %v", l, err)
	}
	if after := snapshot(t, d.O); after != before {
		t.Fatalf("O changed:\n%s", after)
	}
}

// Protected paths: an existing one is read-only, a missing one cannot be
// created, and its placeholder is removed afterwards.
func TestReadOnlyPaths(t *testing.T) {
	d := newDirs(t)
	hooks := filepath.Join(d.W, ".git", "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(d.W, ".claude")
	o := run(t, &sandbox.Spec{
		Mounts:   d.mounts(),
		ReadOnly: []string{hooks, missing},
		Command:  []string{"/bin/sh", "-c", "echo x >" + hooks + "/pre-commit; echo rc=$?; mkdir -p " + missing + "/a; echo rc=$?; echo {} >" + missing + "/settings.json; echo rc=$?; echo ok >" + d.W + "/.git/config; echo rc=$?"},
	})
	if got := strings.Count(o.stdout, "rc=0"); got != 1 || !strings.HasSuffix(strings.TrimSpace(o.stdout), "rc=0") {
		t.Fatalf("want only the last write to succeed: %q %q", o.stdout, o.stderr)
	}
	if _, err := os.Lstat(filepath.Join(hooks, "pre-commit")); err == nil {
		t.Fatal("pre-commit hook created")
	}
	if _, err := os.Lstat(missing); err == nil {
		t.Fatal("placeholder for a missing protected path left behind")
	}
}

// Masks hide directories and files inside grants.
func TestMasks(t *testing.T) {
	d := newDirs(t)
	os.Mkdir(filepath.Join(d.W, "secret"), 0o755)
	os.WriteFile(filepath.Join(d.W, "secret", "k"), []byte(d.canary), 0o644)
	os.WriteFile(filepath.Join(d.W, ".env"), []byte(d.canary), 0o644)
	o := run(t, &sandbox.Spec{
		Mounts:  d.mounts(),
		Masks:   []string{filepath.Join(d.W, "secret"), filepath.Join(d.W, ".env"), filepath.Join(d.W, "absent")},
		Command: []string{"/bin/sh", "-c", "ls " + d.W + "/secret; cat " + d.W + "/secret/k " + d.W + "/.env; echo x >" + d.W + "/.env"},
	})
	d.noCanary(t, o)
	if o.res.ExitCode == 0 {
		t.Fatalf("writing a masked file succeeded")
	}
}

// Case 10: only the grants and the minimal runtime are visible.
func TestHostile10HiddenHostSurface(t *testing.T) {
	d := newDirs(t)
	o := sh(t, "ls /; echo ---; ls /home /root /run/user /var/run/docker.sock /sys /mnt /opt 2>&1; echo ---; cat /proc/self/mountinfo", d.mounts()...)
	parts := strings.Split(o.stdout, "---\n")
	if len(parts) != 3 {
		t.Fatalf("output %q", o.stdout)
	}
	for _, name := range strings.Fields(parts[0]) {
		switch name {
		case "bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "tmp", "usr":
		default:
			t.Errorf("unexpected top-level entry /%s", name)
		}
	}
	if strings.Count(parts[1], "No such file") < 7 {
		t.Errorf("host paths visible: %q", parts[1])
	}
	home, _ := os.UserHomeDir()
	for _, line := range strings.Split(parts[2], "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		if home != "" && (f[3] == home || strings.HasPrefix(f[3], home+"/") || f[4] == home) {
			t.Errorf("host home in mountinfo: %s", line)
		}
	}
}

// Case 13, in part: limits.file_size (RLIMIT_FSIZE) bounds what one file
// takes of the disk. fallocate(2) with FALLOC_FL_KEEP_SIZE allocates past
// the end without growing the file, which the limit never meets, so one
// call could take any amount of the host's disk through a read-write grant:
// the sandbox gets EOPNOTSUPP for it, and a plain allocation meets the
// limit.
func TestFileSizeLimitAndFallocate(t *testing.T) {
	if _, err := exec.LookPath("fallocate"); err != nil {
		t.Skip("no fallocate(1)")
	}
	d := newDirs(t)
	o := run(t, &sandbox.Spec{
		Mounts:  d.mounts(),
		Limits:  sandbox.Limits{FileBytes: 64 << 20},
		Command: []string{"/bin/sh", "-c", "cd " + d.W + " && : >k && : >small && (fallocate -n -l 1G k 2>&1; echo rc=$?; fallocate -l 1G g 2>&1; echo rc=$?; fallocate -n -l 1M small 2>&1; echo rc=$?) 2>&1"},
	})
	if strings.Count(o.stdout, "rc=0") != 0 {
		t.Errorf("an allocation past the file size limit, or without growing the file, succeeded: %q", o.stdout)
	}
	if strings.Count(o.stdout, "unsupported")+strings.Count(o.stdout, "not supported") != 2 || !strings.Contains(o.stdout, "File size limit exceeded") {
		t.Errorf("want EOPNOTSUPP for FALLOC_FL_KEEP_SIZE (twice) and SIGXFSZ past the limit: %q", o.stdout)
	}
	var used int64
	filepath.WalkDir(d.W, func(p string, e fs.DirEntry, err error) error {
		var st syscall.Stat_t
		if err == nil && syscall.Lstat(p, &st) == nil {
			used += st.Blocks * 512
		}
		return nil
	})
	if used > 64<<20 {
		t.Errorf("the grant holds %d MiB after the calls", used>>20)
	}
}

// Case 13, in part: the preallocation ioctls that predate fallocate(2)
// (FS_IOC_RESVSP, FS_IOC_RESVSP64, FS_IOC_ZERO_RANGE, from XFS, which the
// VFS answers for any regular file) are fallocate with FALLOC_FL_KEEP_SIZE
// under another name: each allocates past the end without growing the
// file, which RLIMIT_FSIZE never meets. The sandbox gets EOPNOTSUPP for
// them as for fallocate; FS_IOC_UNRESVSP64, which punches a hole, passes.
func TestFileSizeLimitAndPreallocIoctls(t *testing.T) {
	needPython(t)
	d := newDirs(t)
	script := `import fcntl, os, struct
resv = struct.pack("@hhqqiI4i", 0, 0, 0, 1 << 30, 0, 0, 0, 0, 0, 0)
for name, req in (("RESVSP", 0x40305828), ("RESVSP64", 0x4030582a), ("ZERO_RANGE", 0x40305839), ("UNRESVSP64", 0x4030582b)):
    fd = os.open(name, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.ioctl(fd, req, resv)
        print(name, 0)
    except OSError as e:
        print(name, e.errno)
    os.close(fd)
`
	o := run(t, &sandbox.Spec{
		Mounts:  d.mounts(),
		Cwd:     d.W,
		Limits:  sandbox.Limits{FileBytes: 64 << 20},
		Command: []string{"/usr/bin/python3", "-c", script},
	})
	want := "RESVSP 95\nRESVSP64 95\nZERO_RANGE 95\nUNRESVSP64 0\n"
	if o.stdout != want {
		t.Errorf("errno of each ioctl: got %q (stderr %q), want %q (EOPNOTSUPP but for the hole)", o.stdout, o.stderr, want)
	}
	var used int64
	filepath.WalkDir(d.W, func(p string, e fs.DirEntry, err error) error {
		var st syscall.Stat_t
		if err == nil && syscall.Lstat(p, &st) == nil {
			used += st.Blocks * 512
		}
		return nil
	})
	if used > 64<<20 {
		t.Errorf("the grant holds %d MiB after the calls, past the 64 MiB file size limit", used>>20)
	}
}
