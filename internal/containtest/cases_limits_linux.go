package containtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
)

// shortWall is the wall-time limit of the session the signal and wall
// time cases open beside the suite's (cases 15 and 16): short enough that
// each call ends at it soon, long enough for a sandbox to start.
const shortWall = 4 * time.Second

// shortSession opens a second session over the backend whose grant is
// the suite's with a wall-time limit of shortWall: the limit the backend
// itself enforces on the whole sandbox, not the shell tool's own timeout,
// which the runner enforces inside it. The caller closes it.
func (s *suite) shortSession() *broker.Session {
	s.t.Helper()
	l := s.grant.LimitsFor("shell")
	l.Time = shortWall
	rw := []string{s.W}
	if s.disk != "" {
		rw = append(rw, s.disk)
	}
	g, err := grant.FromFlags(s.W, grant.Flags{ReadWrite: rw, ReadOnly: []string{s.R}, Limits: l, AllowUnenforcedLimits: s.opts.AllowUnenforced})
	if err != nil {
		s.t.Fatal(err)
	}
	return s.open(s.t, g)
}

// Cases 15 and 16: a command that ignores SIGTERM and spins, one that
// stops itself, one that sleeps, one that kills every process it can
// signal and one that signals the sandbox's init all end at the
// backend's wall-time limit (or sooner, by their own doing); nothing of
// theirs survives the call, and the session runs the next call.
func (s *suite) wallTimeAndSignals() {
	sess := s.shortSession()
	defer sess.Close()
	m := s.marker
	for _, c := range []struct {
		name, script string
		timeout      bool // the call must end at the wall-time limit
	}{
		{"ignore-term-and-spin", "# spin-" + m + "\ntrap '' TERM INT HUP; while :; do :; done", true},
		{"stop-self", "# stop-" + m + "\nkill -STOP $$; sleep 81" + m, true},
		{"sleep", "sleep 82" + m, true},
		{"kill-all", "sleep 83" + m + " & kill -9 -1; sleep 84" + m, false},
		{"kill-init", "kill -9 1; kill -TERM 1; kill -HUP 1; sleep 85" + m, false},
	} {
		res := s.callOn(sess, "shell", map[string]any{"command": c.script, "cwd": s.W})
		s.t.Logf("%s: class %s, content %q", c.name, res.Class, res.Output.Content)
		if c.timeout && res.Class != broker.ClassTimeout {
			s.t.Errorf("%s: class %s, want the call ended at the wall-time limit (%s): %q", c.name, res.Class, broker.ClassTimeout, res.Output.Content)
		}
		if res.Class == broker.ClassOK && !c.timeout && strings.Contains(res.Output.Content, "[exit 0]") {
			s.t.Errorf("%s: the command ran to its end: %q", c.name, res.Output.Content)
		}
	}
	for _, n := range []string{"spin-" + m, "stop-" + m, "sleep 81" + m, "sleep 82" + m, "sleep 83" + m, "sleep 84" + m, "sleep 85" + m} {
		s.noSurvivors(n)
	}
	res := s.callOn(sess, "shell", map[string]any{"command": "echo still-runs", "cwd": s.W})
	if !strings.Contains(res.Output.Content, "still-runs") {
		s.t.Errorf("after the signals, the session does not run a call: class %s: %q", res.Class, res.Output.Content)
	}
}

// Case 17: the sandbox cannot leave its cgroup, change its limits or
// mount a cgroup file system, and sees no cgroup path of the host's.
func (s *suite) cgroupEscape() {
	out := s.sh(`for f in /sys/fs/cgroup/cgroup.procs /sys/fs/cgroup/../cgroup.procs /sys/fs/cgroup/../../cgroup.procs /sys/fs/cgroup/cgroup.subtree_control; do (echo $$ >$f) 2>/dev/null; echo "procs $f rc=$?"; done
for f in pids.max memory.max memory.swap.max memory.high cpu.max cgroup.max.descendants; do (echo max >/sys/fs/cgroup/$f) 2>/dev/null; echo "limit $f rc=$?"; done
(mkdir /sys/fs/cgroup/escape) 2>/dev/null; echo "mkdir rc=$?"
mkdir -p /tmp/cg; (mount -t cgroup2 none /tmp/cg) 2>/dev/null; echo "mount2 rc=$?"; (mount -t cgroup -o pids none /tmp/cg) 2>/dev/null; echo "mount1 rc=$?"
echo cgroup-begin; cat /proc/self/cgroup; echo cgroup-end`)
	s.t.Logf("cgroup writes:\n%s", out)
	s.noRC0("cgroup writes", out)
	_, cg, _ := strings.Cut(out, "cgroup-begin\n")
	cg, _, _ = strings.Cut(cg, "cgroup-end")
	for _, line := range strings.Split(strings.TrimSpace(cg), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		p := f[2]
		if strings.Contains(p, "..") || strings.Contains(p, ".slice") || strings.Contains(p, ".scope") || strings.Contains(p, "libpod") || strings.Contains(p, "airlock") {
			s.t.Errorf("/proc/self/cgroup shows a path of the host's hierarchy: %q", line)
		}
	}
}

// Case 38: no process in the sandbox can write the airlock binary it
// runs (the init's, the runner's), by its /proc/PID/exe, through a
// descriptor held open on it, or at any path it is mounted at; the host's
// copy is unchanged. (A shell's own executable is left alone: it is the
// host's or the image's /bin/sh, which the read-only system directories
// and read-only root of other cases keep.)
func (s *suite) airlockBinary() {
	before := s.binarySums()
	out := s.sh(`try() { (echo evil >>"$1") 2>/dev/null; echo "write $1 rc=$?"; if (exec 3<"$1") 2>/dev/null; then (exec 3<"$1"; echo evil >>/proc/self/fd/3) 2>/dev/null; echo "reopen $1 rc=$?"; fi; }
for p in /proc/[0-9]*; do case "$(readlink $p/exe 2>/dev/null)" in */sh|*/dash|*/bash|*/busybox) continue;; esac; try $p/exe; done
for f in /.airlock/* /proc/1/root/.airlock/*; do [ -f "$f" ] && try "$f"; done
echo done`)
	s.t.Logf("writes to the airlock binary:\n%s", out)
	s.noRC0("writing the airlock binary", out)
	if !strings.Contains(out, "write /proc/1/exe") {
		s.t.Errorf("the script did not try PID 1:\n%s", out)
	}
	after := s.binarySums()
	for p, sum := range before {
		if after[p] != sum {
			s.t.Errorf("the host's %s changed", p)
		}
	}
}

// binarySums hashes the host's airlock binaries the backend runs.
func (s *suite) binarySums() map[string]string {
	s.t.Helper()
	sums := map[string]string{}
	for _, p := range append([]string{os.Args[0]}, s.opts.Binaries...) {
		f, err := os.Open(p)
		if err != nil {
			s.t.Fatalf("hashing %s: %v", p, err)
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			s.t.Fatalf("hashing %s: %v", p, err)
		}
		sums[p] = hex.EncodeToString(h.Sum(nil))
	}
	return sums
}

// Case 50: output past the grant's output limit, on both streams and in
// many short lines, is cut at the limit and says so; a tool's own
// results (grep's) are capped the same way.
func (s *suite) outputFlood() {
	limit := s.grant.LimitsFor("shell").Output
	for _, script := range []string{
		"yes | head -c 50000000; echo end",
		"head -c 50000000 /dev/zero | tr '\\0' e >&2; echo end",
		"seq 1 3000000; echo end",
	} {
		res := s.call("shell", map[string]any{"command": script, "cwd": s.W})
		if n := int64(len(res.Output.Content)); n > limit+4096 {
			s.t.Errorf("%q: %d bytes of output reached the model, past the limit of %d", script, n, limit)
		}
		if !res.Output.Truncated && res.Class != broker.ClassOutput {
			s.t.Errorf("%q: class %s, not truncated: %d bytes", script, res.Class, len(res.Output.Content))
		}
	}
	big := filepath.Join(s.W, "flood-"+s.marker+".txt")
	s.sh("yes 'match line' | head -c 30000000 >" + big + "; echo made")
	defer os.Remove(big)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"grep", map[string]any{"pattern": "match", "path": big}},
		{"read_file", map[string]any{"path": big}},
	} {
		res := s.call(c.tool, c.args)
		if n := int64(len(res.Output.Content)); n > limit+4096 {
			s.t.Errorf("%s: %d bytes of output reached the model, past the limit of %d", c.tool, n, limit)
		}
	}
}

// Case 14, for background work: a background command (and whatever it
// started, in a new session or double-forked) outlives the call that
// started it, as it should, but not its stop nor its session: stopping
// one work, then closing the session with another still running, leaves
// no process of either on the host.
func (s *suite) backgroundLeftBehind() {
	sess := s.open(s.t, s.grant)
	closed := false
	defer func() {
		if !closed {
			sess.Close()
		}
	}()
	m := s.marker
	start := func(n string) string {
		s.t.Helper()
		res := s.callOn(sess, "shell", map[string]any{"cwd": s.W, "run_in_background": true,
			"command": "setsid sleep 9" + n + m + " & (sleep 9" + n + "1" + m + " &); nohup sleep 9" + n + "2" + m + " >/dev/null 2>&1 & echo up; sleep 9" + n + "3" + m})
		id := ""
		for _, f := range strings.Fields(res.Output.Content) {
			if strings.HasPrefix(f, "wrk_") {
				id = strings.Trim(f, ".,;:()[]\"'")
			}
		}
		if id == "" {
			s.t.Fatalf("no work id: class %s: %q", res.Class, res.Output.Content)
		}
		return id
	}
	a := start("1")
	start("2") // left running: the session's close ends it
	// Each work is running once its processes show on the host.
	for _, n := range []string{"sleep 913" + m, "sleep 923" + m} {
		deadline := time.Now().Add(time.Minute)
		for len(hostProcs(n)) == 0 {
			if time.Now().After(deadline) {
				s.t.Fatalf("the background command %q never showed on the host", n)
			}
			time.Sleep(10 * time.Millisecond) //permit:time.Sleep (a named wait: for the work to start)
		}
	}
	res := s.callOn(sess, "background_command", map[string]any{"operation": "stop", "work_id": a})
	s.t.Logf("stop %s: class %s: %q", a, res.Class, res.Output.Content)
	for _, n := range []string{"sleep 91" + m, "sleep 911" + m, "sleep 912" + m, "sleep 913" + m} {
		s.noSurvivors(n)
	}
	sess.Close()
	closed = true
	for _, n := range []string{"sleep 92" + m, "sleep 921" + m, "sleep 922" + m, "sleep 923" + m} {
		s.noSurvivors(n)
	}
}

// Case 7: a read-only grant nested in a read-write one cannot be carried
// off from inside (removed, renamed, or an ancestor renamed, to be
// replaced by a symlink), and when it is swapped for a symlink on the
// host between two calls, the next call neither reads nor writes where
// the symlink leads: it is refused, or the symlink is covered.
func (s *suite) nestedGrantSwapped() {
	n := filepath.Join(s.base, "nest-"+s.marker)
	ro := filepath.Join(n, "a", "ro")
	if err := os.MkdirAll(ro, 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ro, "f"), []byte("nested\n"), 0o644); err != nil {
		s.t.Fatal(err)
	}
	g, err := grant.FromFlags(n, grant.Flags{ReadWrite: []string{n}, ReadOnly: []string{ro}, Limits: s.grant.LimitsFor("shell"), AllowUnenforcedLimits: s.opts.AllowUnenforced})
	if err != nil {
		s.t.Fatal(err)
	}
	fiBefore, err := os.Lstat(ro)
	if err != nil {
		s.t.Fatal(err)
	}
	sess := s.open(s.t, g)
	defer sess.Close()
	// Dispatch 1: every way to move the read-only tree out of its place.
	out := s.shOn(sess, n, `(echo x >a/ro/f) 2>/dev/null; echo "write rc=$?"
(rm -rf a/ro) 2>/dev/null; [ -d a/ro ] && [ ! -L a/ro ]; echo "still-there rc=$?"
(mv a/ro a/ro2) 2>/dev/null && echo "mv-ro rc=0"
(mv a a2) 2>/dev/null && echo "mv-parent rc=0"
if [ ! -d a/ro ] || [ -L a/ro ]; then mkdir -p a; rm -rf a/ro; ln -s `+s.O+` a/ro; echo swapped; fi
for f in a2/ro/f a/ro2/f; do [ -f $f ] && (echo x >$f) 2>/dev/null && echo "wrote $f rc=0"; done; echo done`)
	s.t.Logf("dispatch 1:\n%s", out)
	for _, line := range strings.Split(out, "\n") {
		if strings.HasSuffix(line, " rc=0") && !strings.HasPrefix(line, "still-there") || line == "swapped" {
			s.t.Errorf("dispatch 1, the read-only grant was changed or carried off from inside: %s", line)
		}
	}
	if fi, err := os.Lstat(ro); err != nil || !os.SameFile(fi, fiBefore) {
		s.t.Errorf("after dispatch 1 the read-only grant %s is no longer the directory granted (%v): its tree was carried off to a name the read-write grant covers", ro, err)
	}
	if b, err := os.ReadFile(filepath.Join(ro, "f")); err != nil || string(b) != "nested\n" {
		s.t.Errorf("the read-only grant's file after dispatch 1: %q, %v", b, err)
	}
	// Between the calls, the host swaps it for a symlink to $O.
	if err := os.RemoveAll(ro); err != nil {
		s.t.Fatal(err)
	}
	if err := os.Symlink(s.O, ro); err != nil {
		s.t.Fatal(err)
	}
	res := s.callOn(sess, "shell", map[string]any{"cwd": n, "command": "cat a/ro/canary; echo pwned >a/ro/pwned; ls a/ro; echo done"})
	s.t.Logf("dispatch 2: class %s: %q", res.Class, res.Output.Content)
	s.callOn(sess, "read_file", map[string]any{"path": filepath.Join(ro, "canary")})
	s.callOn(sess, "write_file", map[string]any{"path": filepath.Join(ro, "pwned"), "content": "x"})
	if _, err := os.Lstat(filepath.Join(s.O, "pwned")); err == nil {
		s.t.Errorf("a call wrote through the swapped read-only grant into $O")
		os.Remove(filepath.Join(s.O, "pwned"))
	}
}

// shOn runs script with the shell tool in dir on sess and returns what it
// printed.
func (s *suite) shOn(sess *broker.Session, dir, script string) string {
	s.t.Helper()
	res := s.callOn(sess, "shell", map[string]any{"command": script, "cwd": dir})
	if res.Class != broker.ClassOK {
		s.t.Fatalf("shell %q: class %s: %q", script, res.Class, res.Output.Content)
	}
	return res.Output.Content
}

// Case 49, cancellation: a call whose context is cancelled while its
// command runs (one that ignores SIGTERM, with children in a new session,
// double-forked and nohup'd) returns, and nothing it started survives;
// the session runs the next call.
func (s *suite) cancelMidRun() {
	m := s.marker
	raw, err := json.Marshal(map[string]any{"cwd": s.W, "command": "setsid sleep 961" + m + " & (sleep 962" + m + " &); nohup sleep 963" + m + " >/dev/null 2>&1 & trap '' TERM INT HUP; sleep 964" + m})
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type answer struct {
		res *broker.Result
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := s.sess.Call(ctx, "shell", raw)
		done <- answer{res, err}
	}()
	deadline := time.Now().Add(time.Minute)
	for len(hostProcs("sleep 964"+m)) == 0 {
		if time.Now().After(deadline) {
			s.t.Fatal("the command never showed on the host")
		}
		time.Sleep(10 * time.Millisecond) //permit:time.Sleep (a named wait: for the command to start)
	}
	cancel()
	select {
	case a := <-done:
		if a.res != nil {
			s.t.Logf("cancelled call: err %v, class %s: %q", a.err, a.res.Class, a.res.Output.Content)
			for _, sec := range s.secrets {
				if strings.Contains(a.res.Output.Content, sec) {
					s.t.Errorf("the cancelled call's output holds a secret")
				}
			}
		}
	case <-time.After(3 * time.Minute):
		s.t.Fatal("the cancelled call never returned")
	}
	for _, n := range []string{"sleep 961" + m, "sleep 962" + m, "sleep 963" + m, "sleep 964" + m} {
		s.noSurvivors(n)
	}
	if out := s.sh("echo still-runs"); !strings.Contains(out, "still-runs") {
		s.t.Errorf("after the cancel, the session does not run a call: %q", out)
	}
}
