package containtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/wire"
)

// Open opens a broker session over the backend under test for grant g
// (every path it names is on this host). The suite closes the session;
// what else open sets up for it (a tool-server) it may leave to t's
// cleanup. Cases that need a session of their own open it with their
// subtest's t.
type Open func(t *testing.T, g *grant.Grant) *broker.Session

// Options adjust the suite to what a backend legitimately lacks. A nil
// *Options is the default: every limit enforced.
type Options struct {
	// AllowUnenforced runs calls whose memory or process limit the
	// backend cannot enforce here (an unprivileged native broker without a
	// cgroup) instead of failing them; the fork bomb and memory cases then
	// skip, naming what the results report unenforced.
	AllowUnenforced bool
	// Probe is a prebuilt probe binary (see the probe command); empty
	// builds one with the go command.
	Probe string
	// Binaries are the host's airlock binaries the backend runs in its
	// sandboxes besides the test binary (os.Args[0], always checked):
	// case 38 checks that none changes.
	Binaries []string
}

// Limits of the suite's grant: small enough that the fork bomb and the
// memory bomb hit them quickly.
const (
	memoryLimit = 128 << 20
	pidsLimit   = 64
)

// Run runs every case against the backend open opens sessions on, as
// subtests named for their hostile case. The backend's sandboxes must run
// on this host: the suite checks the host's processes and files after
// the calls. Run sets environment variables (the broker's secrets a
// sandbox must not inherit), so the calling test must not be parallel.
func Run(t *testing.T, open Open, opts *Options) {
	var o Options
	if opts != nil {
		o = *opts
	}
	s := newSuite(t, &o)
	s.open, s.opts = open, &o
	s.sess = open(t, s.grant)
	t.Cleanup(func() { s.sess.Close() })
	// The first call shows whether the backend runs at all, and which
	// limits it enforces.
	res := s.call("shell", map[string]any{"command": "echo ready", "cwd": s.W})
	if !strings.Contains(res.Output.Content, "ready") {
		t.Fatalf("the backend cannot run a shell call: class %s: %q", res.Class, res.Output.Content)
	}
	// What the host holds once the backend has run a call (what it keeps
	// for its whole life, opened at its first, included): the cases'
	// calls must leave it so once their sessions are closed.
	before := s.snapshot()
	if iso := res.Output.Meta.Isolation; iso != nil {
		s.unenforced = iso.Unenforced
		s.isolation = *iso
	}
	t.Logf("isolation: %+v", s.isolation)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s.t = t
			c.run(s)
		})
	}
	s.t = t
	s.checkHost()
	s.sess.Close()
	s.checkGivenBack(before)
}

// suite is one run's fixture:
//
//	base/w        $W, granted read-write (a git repository, with a nested one in vendor/x)
//	base/r        $R, granted read-only (f, and the probe)
//	base/o        $O, not granted: canary holds the secret
//	base/w-evil/s, base/w_x/s, base/wx   not granted, named like $W (the secret)
type suite struct {
	t          *testing.T
	open       Open
	opts       *Options
	sess       *broker.Session
	grant      *grant.Grant
	base       string
	W, R, O    string
	probe      string // the probe's path inside $R
	canary     string // the secret of the files outside the grant
	envCanary  string // the value of the broker's secret environment
	sentinel   *sentinel
	sockets    *unixSentinel // host services' sockets in $W (case 28)
	unenforced []wire.Limit
	isolation  wire.Isolation
	marker     string // unique digits naming this run's leftover processes
	secrets    []string
	sweep      map[string]string // the probe's syscall sweep
	disk       string            // a small file system granted read-write (case 13), or ""
	vol        string            // a small file system mounted at $W/vol (case 13), or ""
}

func newSuite(t *testing.T, o *Options) *suite {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := &suite{t: t, base: base, W: filepath.Join(base, "w"), R: filepath.Join(base, "r"), O: filepath.Join(base, "o"),
		canary: "canary-" + randomHex(16), envCanary: "envcanary-" + randomHex(16)}
	s.secrets = []string{s.canary, s.envCanary}
	n, _ := strconv.ParseUint(randomHex(3), 16, 32)
	s.marker = strconv.Itoa(600000 + int(n%300000))
	files := map[string]string{
		"w/f.txt":                "hello\n",
		"w/.git/HEAD":            "ref: refs/heads/main\n",
		"w/.git/config":          "original\n",
		"w/vendor/x/.git/HEAD":   "ref: refs/heads/main\n",
		"w/vendor/x/README":      "vendored\n",
		"r/f":                    "readonly\n",
		"o/canary":               s.canary + "\n",
		"w-evil/s":               s.canary + "\n",
		"w_x/s":                  s.canary + "\n",
		"wx":                     s.canary + "\n",
		"w/mnt/.keep":            "",
		"w/sub/.keep":            "",
		"r/sub/.keep":            "",
		"w/vendor/x/.git/config": "nested\n",
	}
	for p, c := range files {
		full := filepath.Join(base, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A set-user-ID file already in $W (case 42): the sandbox must not
	// change it, since its bit would stay (a write through a shared
	// mapping keeps it).
	if err := os.WriteFile(filepath.Join(s.W, "tool-suid"), []byte("#!/bin/sh\necho original\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(s.W, "tool-suid"), 0o755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	s.probe = filepath.Join(s.R, "probe")
	installProbe(t, o.Probe, s.probe)
	// The broker's own secrets, which no sandbox may inherit (case 30).
	t.Setenv("AIRLOCK_SUITE_TOKEN", s.envCanary)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s.envCanary)
	t.Setenv("SSH_AUTH_SOCK", "/run/"+s.envCanary+".sock")
	s.sentinel = newSentinel(t)
	// Host services' sockets in $W, there before the grant is built (case
	// 28): one at the top, one deep, one in a directory granted read-only.
	s.sockets = newUnixSentinel(t, filepath.Join(s.W, "host.sock"), filepath.Join(s.W, "sub", "deep", "dir", "host.sock"), filepath.Join(s.R, "sub", "host.sock"))
	rw := []string{s.W}
	// Mounted before the session opens, so that every sandbox, warm ones
	// too, has it in its view of $W.
	s.vol = smallDisk(t, filepath.Join(s.W, "vol"))
	if s.disk = smallDisk(t, filepath.Join(base, "disk")); s.disk != "" {
		rw = append(rw, s.disk)
	}
	if s.grant, err = grant.FromFlags(s.W, grant.Flags{
		ReadWrite: rw, ReadOnly: []string{s.R},
		Limits:                grant.Limits{Memory: memoryLimit, Processes: pidsLimit, Time: 2 * time.Minute, Tmp: 512 << 20},
		AllowUnenforcedLimits: o.AllowUnenforced,
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// call runs one tool call through the session and fails the test if any
// secret shows in what the model reads.
func (s *suite) call(tool string, args map[string]any) *broker.Result {
	s.t.Helper()
	return s.callOn(s.sess, tool, args)
}

// callOn is call on another of the suite's sessions.
func (s *suite) callOn(sess *broker.Session, tool string, args map[string]any) *broker.Result {
	s.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := sess.Call(ctx, tool, raw)
	if err != nil {
		s.t.Fatalf("%s %s: %v", tool, raw, err)
	}
	for _, sec := range s.secrets {
		if strings.Contains(res.Output.Content, sec) {
			s.t.Errorf("%s %s: the output holds a secret from outside the sandbox: %q", tool, raw, res.Output.Content)
		}
	}
	return res
}

// sh runs script with the shell tool in $W and returns what it printed.
func (s *suite) sh(script string) string {
	s.t.Helper()
	res := s.call("shell", map[string]any{"command": script, "cwd": s.W})
	if res.Class != broker.ClassOK {
		s.t.Fatalf("shell %q: class %s: %q", script, res.Class, res.Output.Content)
	}
	return res.Output.Content
}

// denied asserts that a file tool's call did not do what it asked: the
// broker refused it, or the tool failed.
func (s *suite) denied(tool string, args map[string]any) {
	s.t.Helper()
	res := s.call(tool, args)
	if res.Class != broker.ClassRefused && !res.Output.IsError {
		s.t.Errorf("%s %v: class %s, not refused: %q", tool, args, res.Class, res.Output.Content)
	}
}

// refused asserts that the broker refused a call before running it.
func (s *suite) refused(tool string, args map[string]any) {
	s.t.Helper()
	res := s.call(tool, args)
	if res.Class != broker.ClassRefused {
		s.t.Errorf("%s %v: class %s, want refused before any open: %q", tool, args, res.Class, res.Output.Content)
	}
	if strings.Contains(res.Output.Content, "root:x:0:0") {
		s.t.Errorf("%s %v: the refusal echoes a file: %q", tool, args, res.Output.Content)
	}
}

// noRC0 fails when any "rc=0" marker shows in out: each attempt of a
// script echoes its exit status, and every one must fail.
func (s *suite) noRC0(what, out string) {
	s.t.Helper()
	if strings.Contains(out, "rc=0\n") || strings.HasSuffix(out, "rc=0") {
		s.t.Errorf("%s: an attempt succeeded:\n%s", what, out)
	}
}

// probeOut runs the probe with args and returns its "name result" lines.
func (s *suite) probeOut(args ...string) map[string]string {
	s.t.Helper()
	out := s.sh(s.probe + " " + strings.Join(args, " ") + "; echo probe-exit=$?")
	got := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			got[f[0]] = f[1]
		}
	}
	if !strings.Contains(out, "probe-exit=0") {
		s.t.Fatalf("probe %v did not run:\n%s", args, out)
	}
	s.t.Logf("probe %v:\n%s", args, out)
	return got
}

// sys is the probe's syscall sweep, run once per suite.
func (s *suite) sys() map[string]string {
	s.t.Helper()
	if s.sweep == nil {
		s.sweep = s.probeOut("sys")
	}
	return s.sweep
}

// errnos asserts that every named call of the probe's sweep failed with
// one of want (errno numbers).
func (s *suite) errnos(got map[string]string, names []string, want ...string) {
	s.t.Helper()
	for _, n := range names {
		v, ok := got[n]
		if !ok {
			s.t.Errorf("%s: the probe did not report it", n)
			continue
		}
		if !slices.Contains(want, v) {
			s.t.Errorf("%s: errno %s, want one of %v (refused by the sandbox)", n, v, want)
		}
	}
}

const (
	eperm  = "1"
	esrch  = "3"
	enosys = "38"
)

// noSurvivors asserts, just after a call returned, that none of the
// host's processes whose command line holds needle can run again: each is
// a zombie or has SIGKILL pending (a backend may answer the call while
// the kernel is still reaping its sandbox), and each is soon gone.
func (s *suite) noSurvivors(needle string) {
	s.t.Helper()
	left := hostProcs(needle)
	for _, p := range left {
		pid, _, _ := strings.Cut(p, ":")
		if st, ok := procState(pid); ok && !st.dying() {
			s.t.Errorf("a process outlived its call and can run on: %s (%+v)", p, st)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for len(left) > 0 {
		if time.Now().After(deadline) {
			s.t.Errorf("processes of an ended call are still there after a minute: %q", left)
			return
		}
		time.Sleep(10 * time.Millisecond) //permit:time.Sleep (a named wait: for the kernel to reap)
		left = hostProcs(needle)
	}
}

// procStatus is what /proc/PID/status says of a process's end.
type procStatus struct {
	State          string
	SigPnd, ShdPnd uint64
}

// dying reports a zombie, or a process with SIGKILL pending.
func (p procStatus) dying() bool {
	const sigkill = 1 << (9 - 1)
	return p.State == "Z" || p.State == "X" || p.SigPnd&sigkill != 0 || p.ShdPnd&sigkill != 0
}

// procState reads pid's status; false when it is gone.
func procState(pid string) (procStatus, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return procStatus{}, false
	}
	var st procStatus
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "State":
			st.State, _, _ = strings.Cut(v, " ")
		case "SigPnd":
			st.SigPnd, _ = strconv.ParseUint(v, 16, 64)
		case "ShdPnd":
			st.ShdPnd, _ = strconv.ParseUint(v, 16, 64)
		}
	}
	return st, true
}

// hostProcs lists the host's processes whose command line holds needle,
// as "PID: command line".
func hostProcs(needle string) []string {
	var found []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if cl := strings.ReplaceAll(string(b), "\x00", " "); strings.Contains(cl, needle) {
			found = append(found, e.Name()+": "+cl)
		}
	}
	return found
}

// checkHost asserts, after every case, that nothing outside the grant
// changed and no secret reached the audit records.
func (s *suite) checkHost() {
	t := s.t
	t.Helper()
	for p, want := range map[string]string{"o/canary": s.canary + "\n", "w-evil/s": s.canary + "\n", "r/f": "readonly\n", "w/.git/config": "original\n"} {
		if b, err := os.ReadFile(filepath.Join(s.base, p)); err != nil || string(b) != want {
			t.Errorf("host %s = %q, %v; want it unchanged", p, b, err)
		}
	}
	for _, d := range []string{s.O, filepath.Join(s.base, "w-evil")} {
		ents, err := os.ReadDir(d)
		if err != nil || len(ents) != 1 {
			t.Errorf("host %s: entries %v, %v; want its one file only", d, ents, err)
		}
	}
	records, err := os.ReadFile(filepath.Join(s.sess.Dir(), "audit.jsonl"))
	if err != nil {
		t.Errorf("reading the audit records: %v", err)
	}
	for _, sec := range s.secrets {
		if strings.Contains(string(records), sec) {
			t.Errorf("the audit records hold a secret from outside the sandbox")
		}
	}
}

// sentinel counts connections to the host's loopback (case 19).
type sentinel struct {
	port   int
	accept atomic.Int64
}

func newSentinel(t *testing.T) *sentinel {
	t.Helper()
	s := &sentinel{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.port = ln.Addr().(*net.TCPAddr).Port
	lns := []net.Listener{ln}
	if ln6, err := net.Listen("tcp", "[::1]:"+strconv.Itoa(s.port)); err == nil {
		lns = append(lns, ln6)
	}
	for _, l := range lns {
		countAccepts(t, l, &s.accept)
	}
	return s
}

// countAccepts accepts and closes every connection to l, counting them in
// n, until the test ends.
func countAccepts(t *testing.T, l net.Listener, n *atomic.Int64) {
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { l.Close() })
}

// unixSentinel counts connections to Unix sockets a host service
// listens on (case 28).
type unixSentinel struct {
	paths  []string
	accept atomic.Int64
}

func newUnixSentinel(t *testing.T, paths ...string) *unixSentinel {
	t.Helper()
	s := &unixSentinel{paths: paths}
	for _, p := range paths {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		// Anyone may connect, as to a service's socket made for every
		// user (a sandbox's user is not the host's).
		if err := os.Chmod(p, 0o777); err != nil {
			t.Fatal(err)
		}
		countAccepts(t, ln, &s.accept)
	}
	return s
}

// installProbe copies the probe (prebuilt, or built now with the go
// command) to dst.
func installProbe(t *testing.T, prebuilt, dst string) {
	t.Helper()
	src := prebuilt
	if src == "" {
		var err error
		if src, err = BuildProbe(t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("reading the probe: %v", err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// BuildProbe builds the probe into dir and returns its path, for a test
// that runs the suite in a process that cannot build (an unprivileged
// child): pass the path as Options.Probe.
func BuildProbe(dir string) (string, error) {
	p := filepath.Join(dir, "probe")
	cmd := exec.Command("go", "build", "-o", p, "github.com/airlockhq/airlock/internal/containtest/probe")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the probe: %w\n%s", err, out)
	}
	return p, nil
}

// smallDiskSize is the size of case 13's file system: the disk guard's
// floor on it is a quarter of it (24 MiB), and what a call writes there
// before the guard stops it (tmpfs pages, charged to the sandbox's
// memory) stays under the suite's memory limit.
const smallDiskSize = "96m"

// smallDiskInodes is the inodes of case 13's file system: the guard's
// inode floor on it is 4096.
const smallDiskInodes = "20000"

// smallDisk mounts a tmpfs of smallDiskSize at dir, which it makes, for
// case 13 and returns dir, or "" where this process may not mount.
func smallDisk(t *testing.T, dir string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		return ""
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(testenv.FSSource, dir, "tmpfs", 0, "size="+smallDiskSize+",nr_inodes="+smallDiskInodes); err != nil {
		t.Logf("case 13 will be skipped: mounting a tmpfs: %v", err)
		return ""
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}
