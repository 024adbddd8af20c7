package linux_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/wire"
)

func TestExitAndSignal(t *testing.T) {
	for _, tc := range []struct {
		script       string
		code, signal int
		stdout       string
	}{
		{"echo hi", 0, 0, "hi\n"},
		{"exit 42", 42, 0, ""},
		{"kill -SEGV $$", -1, 11, ""},
		{"kill -TERM $$", -1, 15, ""},
	} {
		t.Run(tc.script, func(t *testing.T) {
			o := sh(t, tc.script)
			got := []any{o.res.ExitCode, o.res.Signal, o.stdout, o.res.Limit, o.res.LimitsHit}
			if diff := cmp.Diff([]any{tc.code, tc.signal, tc.stdout, wire.Limit(""), []wire.Limit(nil)}, got); diff != "" {
				t.Fatalf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestStdinPassthrough(t *testing.T) {
	o := run(t, &sandbox.Spec{Stdin: strings.NewReader("abc\n"), Command: []string{"cat"}})
	if o.stdout != "abc\n" {
		t.Fatalf("stdout %q", o.stdout)
	}
}

// The environment is exactly Spec.Env, in command and tool mode.
func TestEnvOnlySpec(t *testing.T) {
	t.Setenv("AIRLOCK_TEST_SECRET_TOKEN", "s3cret")
	env := []string{"PATH=/usr/bin:/bin", "HOME=/tmp", "FOO=bar"}
	o := run(t, &sandbox.Spec{Env: env, Command: []string{"/usr/bin/env"}})
	got := strings.Split(strings.TrimSpace(o.stdout), "\n")
	sort.Strings(got)
	want := append([]string(nil), env...)
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("env (-want +got)\n%s", diff)
	}
	o = run(t, &sandbox.Spec{Env: env, Stdin: strings.NewReader("ping")})
	if o.stdout != "pong: ping" || o.res.ExitCode != 7 {
		t.Fatalf("tool mode: %q exit %d", o.stdout, o.res.ExitCode)
	}
	if strings.Contains(o.stderr, "s3cret") || !strings.Contains(o.stderr, "FOO=bar") {
		t.Fatalf("tool mode env: %q", o.stderr)
	}
}

// Tool mode runs the runner in the init with every restriction applied.
func TestToolModeIsolation(t *testing.T) {
	o := run(t, &sandbox.Spec{Stdin: strings.NewReader("x")})
	for _, f := range []string{"seccomp", "no_new_privs", "caps-dropped", "pivot_root", "pidns", "netns"} {
		if !contains(o.res.Isolation.Features, f) {
			t.Errorf("feature %q missing from %v", f, o.res.Isolation.Features)
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Only loopback exists, and it is up.
func TestNetworkLoopbackOnly(t *testing.T) {
	o := sh(t, "cat /proc/net/dev | tail -n +3 | cut -d: -f1; cat /sys/class/net/lo/operstate 2>/dev/null; (exec 3<>/dev/tcp/192.0.2.1/80) 2>&1 || true")
	if got := strings.Fields(o.stdout); len(got) < 1 || got[0] != "lo" {
		t.Fatalf("interfaces: %q", o.stdout)
	}
	needPython(t)
	o = run(t, &sandbox.Spec{Command: []string{"python3", "-c", `
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
c = socket.create_connection(s.getsockname()); print("loopback ok")
try:
    socket.create_connection(("192.0.2.1", 80), timeout=2)
except OSError as e:
    print("out", e.errno)
`}})
	if !strings.Contains(o.stdout, "loopback ok") || !strings.Contains(o.stdout, "out 101") {
		t.Fatalf("network: %q %q", o.stdout, o.stderr)
	}
}

// The hostname is the sandbox's; mountinfo shows no host home.
func TestHostnameAndMountinfo(t *testing.T) {
	o := sh(t, "hostname; cat /proc/self/mountinfo")
	if !strings.HasPrefix(o.stdout, "airlock\n") {
		t.Fatalf("hostname: %q", o.stdout)
	}
	if regexp.MustCompile(`\s/(home|root)(/|\s)`).MatchString(o.stdout) {
		t.Fatalf("host home in mountinfo:\n%s", o.stdout)
	}
}

// A pty: tty names it, stty reports the size, and resizes arrive.
func TestTTY(t *testing.T) {
	o := run(t, &sandbox.Spec{TTY: true, TTYRows: 33, TTYCols: 101, Command: []string{"/bin/sh", "-c", "tty; stty size; test -t 0 && echo stdin-tty"}})
	if !strings.Contains(o.stdout, "/dev/") || strings.Contains(o.stdout, "not a tty") || !strings.Contains(o.stdout, "33 101") || !strings.Contains(o.stdout, "stdin-tty") {
		t.Fatalf("tty output %q (stderr %q)", o.stdout, o.stderr)
	}
	sizes := make(chan sandbox.TTYSize, 1)
	sizes <- sandbox.TTYSize{Rows: 50, Cols: 132}
	var so strings.Builder
	// The size is passed on once the command runs: the command waits for
	// a change (the wall time bounds a resize that never comes) rather
	// than half a second, which a loaded machine may take to pass it on.
	_, err := backend(t).Run(context.Background(), &sandbox.Spec{TTY: true, TTYRows: 10, TTYCols: 10, Resize: sizes, Stdout: &so, Env: []string{"PATH=/usr/bin:/bin"},
		Limits: sandbox.Limits{Wall: 10 * time.Second, AllowUnenforced: acceptUnenforced}, Command: []string{"/bin/sh", "-c", `while [ "$(stty size)" = "10 10" ]; do sleep 0.01; done; stty size`}})
	if err != nil || !strings.Contains(so.String(), "50 132") {
		t.Fatalf("resize: %v %q", err, so.String())
	}
}

// While a sandbox runs it has cgroups of its own on the host, which the
// sandbox cannot name (its cgroup namespace is rooted at them); after the
// run they are gone.
func TestCgroupRemoved(t *testing.T) {
	b := backend(t)
	if !hasCgroups(b) {
		testenv.RequireFeature(t, "cgroups")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan out, 1)
	go func() {
		o, err := tryRun(t, &sandbox.Spec{Mounts: []sandbox.Mount{{Source: dir, Writable: true}},
			Command: []string{"/bin/sh", "-c", "cat /proc/self/cgroup > " + dir + "/cgroup; while [ ! -e " + dir + "/go ]; do sleep 0.01; done"}})
		if err != nil {
			t.Error(err)
		}
		done <- o
	}()
	var inside []byte
	for inside == nil {
		select {
		case o := <-done:
			t.Fatalf("the sandbox ended before it was seen: %+v %q", o.res, o.stderr)
		default:
		}
		if b, err := os.ReadFile(filepath.Join(dir, "cgroup")); err == nil && len(b) > 0 {
			inside = b
		}
		time.Sleep(10 * time.Millisecond) // waiting for the sandbox's file
	}
	running := sandboxCgroups(t)
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	<-done
	if len(running) == 0 {
		t.Errorf("no cgroup of the sandbox's on the host while it ran")
	}
	if strings.Contains(string(inside), "airlock-") {
		t.Errorf("the sandbox names its host cgroup: %q", inside)
	}
	if cg := sandboxCgroups(t); len(cg) != 0 {
		t.Fatalf("cgroups left: %v", cg)
	}
}

// Setup errors come back precisely.
func TestSetupErrorIsPrecise(t *testing.T) {
	_, err := tryRun(t, &sandbox.Spec{Mounts: []sandbox.Mount{{Source: "/nonexistent/airlock-test"}}, Command: []string{"true"}})
	if err == nil || !strings.Contains(err.Error(), `opening "/nonexistent/airlock-test"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestReport(t *testing.T) {
	r := backend(t).Report()
	if r.Backend != "linux" || len(r.Features) < 10 {
		t.Fatalf("report %+v", r)
	}
	// Cgroups are required (every call has memory and process limits):
	// the report is ready exactly when the host gives this user them.
	if r.Ready() != hasCgroups(backend(t)) {
		t.Errorf("report ready %v, cgroups %v on this host: %+v", r.Ready(), hasCgroups(backend(t)), r)
	}
	if u := r.Unenforced(); len(u) > 0 == hasCgroups(backend(t)) {
		t.Errorf("report: limits not enforced %q, cgroups %v", u, hasCgroups(backend(t)))
	}
}

// Without cgroups and with CgroupsRequired, New fails closed.
func TestCgroupsRequiredFailsClosed(t *testing.T) {
	_, err := linux.New(&linux.Options{Executable: os.Args[0], Cgroups: linux.CgroupsRequired, CgroupParent: "/airlock-does-not-exist"})
	var mf *sandbox.MissingFeatureError
	if !errors.As(err, &mf) || !strings.Contains(mf.Fix, "Delegate") {
		t.Fatalf("err = %v, want a MissingFeatureError with a fix", err)
	}
}

// The egress proxy socket is reachable through the forwarder on
// 127.0.0.1:ProxyPort, and at its mount point.
func TestProxyForwarder(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "proxy.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				// The forwarder hands the client's connection over: one
				// byte carrying its descriptor.
				defer c.Close()
				oob := make([]byte, syscall.CmsgSpace(4))
				_, oobn, _, _, err := c.(*net.UnixConn).ReadMsgUnix(make([]byte, 1), oob)
				if err != nil {
					return
				}
				msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
				if err != nil || len(msgs) != 1 {
					return
				}
				fds, err := syscall.ParseUnixRights(&msgs[0])
				if err != nil || len(fds) != 1 {
					return
				}
				f := os.NewFile(uintptr(fds[0]), "handed")
				h, err := net.FileConn(f)
				f.Close()
				if err != nil {
					return
				}
				defer h.Close()
				buf := make([]byte, 64)
				n, _ := h.Read(buf)
				h.Write([]byte("proxy:" + string(buf[:n])))
			}()
		}
	}()
	o := run(t, &sandbox.Spec{
		Network: sandbox.Network{ProxySocket: sock, ProxyPort: 3128},
		Command: []string{"/bin/bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/3128; printf hi >&3; head -c 8 <&3; echo; ls /run/airlock"},
	})
	if o.stdout != "proxy:hi\nproxy.sock\n" {
		t.Fatalf("stdout %q stderr %q", o.stdout, o.stderr)
	}
	if !contains(o.res.Isolation.Features, "egress-proxy") {
		t.Errorf("features %v", o.res.Isolation.Features)
	}
}

// New removes cgroups left by a broker that no longer exists.
func TestSweepStaleCgroups(t *testing.T) {
	b := backend(t)
	if !hasCgroups(b) {
		testenv.RequireFeature(t, "cgroups")
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, line := range strings.Split(strings.TrimSpace(string(self)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if parts[1] == "memory" || parts[1] == "pids" {
			dirs = append(dirs, filepath.Join("/sys/fs/cgroup", parts[1], parts[2], "airlock-999999999-1"))
		}
	}
	if len(dirs) == 0 {
		t.Skip("this test knows the cgroup v1 layout only")
	}
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := linux.New(&linux.Options{Executable: os.Args[0], Cgroups: linux.CgroupsOptional}); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			os.Remove(d)
			t.Errorf("stale cgroup %s not swept", d)
		}
	}
}

// A single file can be granted, read-only or read-write.
func TestFileGrant(t *testing.T) {
	d := newDirs(t)
	f := filepath.Join(d.O, "canary")
	g := filepath.Join(d.W, "g")
	os.WriteFile(g, []byte("old"), 0o644)
	o := run(t, &sandbox.Spec{
		Mounts:  []sandbox.Mount{{Source: f, Target: "/data/ro.txt"}, {Source: g, Target: "/data/rw.txt", Writable: true}},
		Command: []string{"/bin/sh", "-c", "cat /data/ro.txt; (echo x >/data/ro.txt) 2>/dev/null && echo wrote-ro; echo new >/data/rw.txt"},
	})
	if o.stdout != d.canary || o.res.ExitCode != 0 {
		t.Fatalf("stdout %q stderr %q", o.stdout, o.stderr)
	}
	if b, _ := os.ReadFile(g); string(b) != "new\n" {
		t.Fatalf("rw file = %q", b)
	}
}

// The rlimits reach the payload.
func TestRlimits(t *testing.T) {
	o := run(t, &sandbox.Spec{
		Limits:  sandbox.Limits{OpenFiles: 77, FileBytes: 1 << 20, MemoryBytes: 1 << 30},
		Command: []string{"/bin/bash", "-c", "ulimit -n; ulimit -f; ulimit -c; ulimit -v"},
	})
	if diff := cmp.Diff("77\n1024\n0\n8388608\n", o.stdout); diff != "" {
		t.Fatalf("ulimits (-want +got)\n%s", diff)
	}
}

// A multi-threaded runner can signal the processes it started from any of
// its threads: the whole init must be one Landlock domain (or unscoped).
func TestToolModeSignalsAcrossThreads(t *testing.T) {
	o := run(t, &sandbox.Spec{Stdin: strings.NewReader("spawn-and-kill")})
	if o.stdout != "kill: <nil> state: signal: killed" {
		t.Fatalf("stdout %q stderr %q", o.stdout, o.stderr)
	}
}
