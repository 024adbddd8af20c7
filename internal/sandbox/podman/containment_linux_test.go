package podman

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"

	"github.com/airlockhq/airlock/internal/procid"
)

// sh runs a shell command in a container through b and returns its output.
func sh(t *testing.T, b *Backend, spec *sandbox.Spec, script string) (string, *sandbox.Result) {
	t.Helper()
	s := *spec
	s.Command = []string{"/bin/sh", "-c", script}
	// One buffer for both streams, which the backend relays each from a
	// goroutine of its own: the writes take turns.
	var out lockedWriter
	s.Stdout, s.Stderr = &out, &out
	res, err := b.Run(context.Background(), &s)
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return out.b.String(), res
}

// lockedWriter is a bytes.Buffer that two writers may write at once.
type lockedWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func TestLiveContainment(t *testing.T) {
	b := newLive(t)
	work := t.TempDir()
	spec := baseSpec(work)
	for _, tc := range []struct {
		name, script, want string
	}{
		// Only loopback: no interface leads anywhere.
		{"no network", "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '", "lo\n"},
		{"read-only root", "touch /x 2>&1; touch /bin/x 2>&1; echo done", "Read-only file system"},
		{"no capabilities", "grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status", "CapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\n"},
		{"no new privileges, seccomp", "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status", "NoNewPrivs:\t1\nSeccomp:\t2\n"},
		{"container root is not host root", "cat /proc/self/uid_map | tr -s ' '", " 0 1879048192 65536\n"},
		{"host paths absent", "ls /home /root /etc/shadow 2>&1 | head -3", "No such file"},
		{"tmp is private and sized", "df -k /tmp | tail -1", "65536"},
		// airlock's seccomp filter on top of Podman's profile.
		{"no nested user namespaces", "unshare -U true 2>&1; echo rc=$?", "Operation not permitted"},
		// No pseudo-terminals, as on the native backend: each pty of
		// Podman's devpts counted against the kernel's one limit of all
		// of them (3072 for every devpts but the host's), and a call
		// held 700 of them with 100 sleeps.
		{"no ptys", "(exec 3<>/dev/ptmx) 2>/dev/null && echo opened || echo refused; ls /dev/pts | wc -l", "refused\n0\n"},
		// The init is not dumpable: its memory, environment and
		// descriptors are out of reach.
		{"init out of reach", "cat /proc/1/environ 2>&1; ls /proc/1/fd 2>&1", "Permission denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, res := sh(t, b, spec, tc.script)
			if !strings.Contains(out, tc.want) {
				t.Errorf("%s: got %q (exit %d), want %q", tc.script, out, res.ExitCode, tc.want)
			}
		})
	}
}

func TestLiveLimits(t *testing.T) {
	b := newLive(t)
	work := t.TempDir()
	t.Run("processes", func(t *testing.T) {
		spec := baseSpec(work)
		spec.Limits.Pids = 16
		out, res := sh(t, b, spec, "for i in $(seq 1 40); do sleep 30 & done 2>&1; echo end")
		if !strings.Contains(out, "fork") && !strings.Contains(out, "Resource temporarily unavailable") {
			t.Errorf("40 processes under a limit of 16 all started: %q", out)
		}
		// The init reports the fork refused at pids.max.
		if !slices.Contains(res.LimitsHit, sandbox.LimitProcesses) {
			t.Errorf("result %+v, want the process limit among the limits hit", res)
		}
	})
	t.Run("memory", func(t *testing.T) {
		spec := baseSpec(work)
		spec.Limits.MemoryBytes = 32 << 20
		spec.Limits.TmpBytes = 256 << 20
		// tmpfs pages are charged to the container: the writer (and, as
		// the pages stay, likely the whole container) is killed.
		out, res := sh(t, b, spec, "head -c 128m /dev/zero > /tmp/fill; echo size=$(wc -c < /tmp/fill)")
		if strings.Contains(out, "size=134217728") {
			t.Errorf("128 MiB written to tmpfs under a 32 MiB memory limit: %q, %+v", out, res)
		}
		// The OOM kill is reported, even when it took the init.
		if !slices.Contains(res.LimitsHit, sandbox.LimitMemory) || res.Limit != sandbox.LimitMemory {
			t.Errorf("result %+v, want the memory limit hit and named as what ended it", res)
		}
	})
	t.Run("tmp", func(t *testing.T) {
		// /dev/shm is a tmpfs of its own, sized by the tmp limit as /tmp
		// is (and as on the native backend): Podman's default gave every
		// container 64 MB there whatever the grant's limits.tmp.
		spec := baseSpec(work)
		spec.Limits.TmpBytes = 4 << 20
		spec.Limits.MemoryBytes = 256 << 20
		out, _ := sh(t, b, spec, "for d in /tmp /dev/shm; do head -c 16m /dev/zero > $d/fill 2>/dev/null; echo $d=$(wc -c < $d/fill); done")
		for _, d := range []string{"/tmp", "/dev/shm"} {
			if n := fieldAfter(out, d+"="); n < 0 || n > 4<<20 {
				t.Errorf("%s took %d bytes under a tmp limit of 4 MiB: %q", d, n, out)
			}
		}
	})
	t.Run("output", func(t *testing.T) {
		spec := baseSpec(work)
		spec.Limits.OutputBytes = 4096
		_, res := sh(t, b, spec, "while :; do echo xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done")
		if !res.OutputTruncated || res.Limit != sandbox.LimitOutput {
			t.Errorf("result %+v, want output truncated", res)
		}
	})
	t.Run("time", func(t *testing.T) {
		spec := baseSpec(work)
		spec.Limits.Wall = 2 * time.Second
		marker := "sleep 987653"
		_, res := sh(t, b, spec, "sleep 987653 & sleep 987653")
		if res.Limit != sandbox.LimitTime || res.Signal != int(syscall.SIGKILL) {
			t.Fatalf("result %+v, want killed at the time limit", res)
		}
		if n := containersOf(t, b.broker); n != "" {
			t.Errorf("containers left after the time limit: %s", n)
		}
		if out, _ := exec.Command("pgrep", "-f", marker).Output(); len(out) > 0 {
			t.Errorf("processes outlived the call: %s", out)
		}
	})
}

// containersOf lists the containers labelled with broker.
func containersOf(t *testing.T, broker string) string {
	t.Helper()
	out, err := exec.Command("podman", "--runtime", "runc", "ps", "--all", "--filter", "label="+LabelBroker+"="+broker, "--format", "{{.Names}}").Output()
	if err != nil {
		t.Fatalf("podman ps: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestLiveProtectedPaths: protected paths are read-only, missing ones
// cannot be created, masks hide, and renaming or removing an ancestor
// does not carry a protection away (each is a mount point).
func TestLiveProtectedPaths(t *testing.T) {
	b := newLive(t)
	work := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(work, ".git"), 0o755))
	must(os.WriteFile(filepath.Join(work, ".git", "config"), []byte("[core]\n"), 0o644))
	must(os.MkdirAll(filepath.Join(work, "secret"), 0o755))
	must(os.WriteFile(filepath.Join(work, "secret", "key"), []byte("CANARY"), 0o600))
	spec := baseSpec(work)
	spec.ReadOnly = []string{filepath.Join(work, ".git", "config"), filepath.Join(work, ".git", "hooks"), filepath.Join(work, ".bashrc"), filepath.Join(work, "a", "b", ".envrc")}
	spec.ReadOnlyDirs = []string{filepath.Join(work, ".git", "hooks")}
	spec.Masks = []string{filepath.Join(work, "secret")}
	script := `cd ` + work + `
exec 2>/dev/null
echo evil >> .git/config 2>/dev/null && echo WROTE-CONFIG
touch .git/hooks/pre-commit 2>/dev/null && echo CREATED-HOOK
echo evil > .bashrc 2>/dev/null && echo WROTE-BASHRC
rm -rf .git/hooks 2>/dev/null; [ -d .git/hooks ] || echo REMOVED-HOOKS
mv .git .git-moved 2>/dev/null && echo MOVED-GIT
mv a a-moved 2>/dev/null && echo MOVED-A
mv a/b a/b-moved 2>/dev/null && echo MOVED-B
echo evil > a/b/.envrc 2>/dev/null && echo WROTE-ENVRC
cat secret/key 2>/dev/null
touch secret/x 2>/dev/null && echo WROTE-MASK
ln .git/config hl 2>/dev/null && echo HARDLINKED-CONFIG
ln -s .git/config sl && echo evil >> sl 2>/dev/null && echo WROTE-VIA-SYMLINK
rm -f sl
cd / && mv ` + work + ` ` + work + `-moved 2>/dev/null && echo MOVED-ROOT
cd ` + work + `
echo ok > free.txt && echo FREE-OK`
	out, res := sh(t, b, spec, script)
	if res.ExitCode != 0 || strings.TrimSpace(out) != "FREE-OK" {
		t.Errorf("exit %d, output:\n%s\nwant only FREE-OK", res.ExitCode, out)
	}
	// The placeholders are airlock's, not the user's: the tools do not list them.
	if out, _ := call(t, b, spec, "glob", map[string]any{"pattern": "**"}); strings.Contains(out.Content, ".bashrc") || strings.Contains(out.Content, ".envrc") {
		t.Errorf("glob lists airlock's placeholders:\n%s", out.Content)
	}
	got, _ := os.ReadFile(filepath.Join(work, ".git", "config"))
	if string(got) != "[core]\n" {
		t.Errorf(".git/config = %q", got)
	}
	for _, p := range []string{".git/hooks", ".bashrc", "a"} {
		if _, err := os.Lstat(filepath.Join(work, p)); err == nil {
			t.Errorf("placeholder %s left on the host after the call", p)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "free.txt")); err != nil {
		t.Errorf("writable tree not written: %v", err)
	}
}

// TestLiveBrokerKilled: a broker killed with SIGKILL mid-call leaves no
// container, and no placeholder in the user's tree, once the next backend
// starts; a file the user made meanwhile under a placeholder's name stays.
func TestLiveBrokerKilled(t *testing.T) {
	if os.Getenv("AIRLOCK_PODMAN_HELPER") == "1" {
		// The broker to kill: it uses the parent's binary and image.
		b, err := New(&Options{Image: os.Getenv("AIRLOCK_PODMAN_IMAGE"), Executable: os.Getenv("AIRLOCK_PODMAN_EXE")})
		if err != nil {
			t.Fatal(err)
		}
		work := os.Getenv("AIRLOCK_PODMAN_WORK")
		spec := baseSpec(work)
		spec.ReadOnly = []string{filepath.Join(work, ".envrc"), filepath.Join(work, ".bashrc"), filepath.Join(work, ".git", "hooks")}
		spec.ReadOnlyDirs = []string{filepath.Join(work, ".git", "hooks")}
		spec.Command = []string{"/bin/sh", "-c", "echo started; sleep 600"}
		spec.Stdout = os.Stdout
		_, _ = b.Run(context.Background(), spec)
		return
	}
	needPodman(t)
	work := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLiveBrokerKilled$", "-test.v")
	cmd.Env = append(os.Environ(), "AIRLOCK_PODMAN_HELPER=1", "AIRLOCK_PODMAN_IMAGE="+live.img, "AIRLOCK_PODMAN_EXE="+live.exe, "AIRLOCK_PODMAN_WORK="+work)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	var seen bytes.Buffer
	for !bytes.Contains(seen.Bytes(), []byte("started")) {
		n, err := stdout.Read(buf)
		if err != nil {
			t.Fatalf("the helper broker ended before its call started: %v\n%s", err, seen.String())
		}
		seen.Write(buf[:n])
	}
	broker := string(procid.Of(cmd.Process.Pid))
	if containersOf(t, broker) == "" {
		t.Fatal("the helper's container is not listed under its label")
	}
	for _, name := range []string{".envrc", ".bashrc", ".git/hooks"} {
		if _, err := os.Lstat(filepath.Join(work, name)); err != nil {
			t.Fatalf("the helper's placeholder %s: %v", name, err)
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	// The user replaces one placeholder with an empty file of their own.
	if err := os.Remove(filepath.Join(work, ".bashrc")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, ".bashrc"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	b := newLive(t) // sweeps the dead broker's containers and placeholders
	_ = b
	for _, name := range []string{".envrc", ".git/hooks", ".git"} {
		if _, err := os.Lstat(filepath.Join(work, name)); err == nil {
			t.Errorf("the killed broker's placeholder %s remains after the next start", name)
		}
	}
	if _, err := os.Lstat(filepath.Join(work, ".bashrc")); err != nil {
		t.Errorf("the user's own .bashrc was removed: %v", err)
	}
	if left := containersOf(t, broker); left != "" {
		t.Errorf("containers of a broker killed with SIGKILL remain after the next start: %s", left)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	stage := stagePrefix + strconv.Itoa(cmd.Process.Pid) + "-" // either form of stageName
	if bytes.Contains(mounts, []byte(stage)) {
		t.Errorf("staged mounts of the killed broker remain after the next start:\n%s", grepLines(mounts, stage))
	}
	if m, _ := filepath.Glob(filepath.Join(os.TempDir(), stage+"*")); len(m) > 0 {
		t.Errorf("staging directories of the killed broker remain: %v", m)
	}
}

func grepLines(data []byte, sub string) string {
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestLiveStopBeforeStart: a stop asked for before the container exists
// is delivered once it does (the command would otherwise sleep on).
func TestLiveStopBeforeStart(t *testing.T) {
	b := newLive(t)
	spec := baseSpec(t.TempDir())
	spec.Command = []string{"/bin/sh", "-c", "sleep 987651"}
	stop := make(chan struct{})
	close(stop)
	spec.Stop = stop
	res, err := b.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Signal != int(syscall.SIGTERM) {
		t.Errorf("result %+v, want ended by the stop's SIGTERM", res)
	}
}

// TestLiveStopWhileStarting: a stop asked for at any moment of the
// container's start (here, racing Run from its first instant) ends the
// command; it is never lost between the container starting and its init
// being ready to hear it. A lost stop shows as the 60 s time limit.
func TestLiveStopWhileStarting(t *testing.T) {
	b := newLive(t)
	for i := range 4 {
		spec := baseSpec(t.TempDir())
		spec.Command = []string{"/bin/sh", "-c", "sleep 987651"}
		stop := make(chan struct{})
		spec.Stop = stop
		go close(stop)
		res, err := b.Run(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		if res.Signal != int(syscall.SIGTERM) {
			t.Errorf("run %d: result %+v, want ended by the stop's SIGTERM", i, res)
		}
	}
}

// TestLiveToolStopBeforeStart: in tool mode, a stop asked for before the
// runner listens for it still cancels the tool.
func TestLiveToolStopBeforeStart(t *testing.T) {
	b := newLive(t)
	spec := baseSpec(t.TempDir())
	stop := make(chan struct{})
	close(stop)
	spec.Stop = stop
	out, res := call(t, b, spec, "shell", map[string]any{"command": "sleep 987651"})
	if res.Limit == sandbox.LimitTime || !out.IsError {
		t.Errorf("result %+v, output %+v; want the tool cancelled by the stop", res, out)
	}
}

// TestLiveSignalBeforeStart: a signal for the command sent before the
// container starts is delivered once it does.
func TestLiveSignalBeforeStart(t *testing.T) {
	b := newLive(t)
	spec := baseSpec(t.TempDir())
	spec.Command = []string{"/bin/sh", "-c", "sleep 987651"}
	sig := make(chan syscall.Signal, 1)
	sig <- syscall.SIGINT
	spec.Signal = sig
	res, err := b.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Signal != int(syscall.SIGINT) {
		t.Errorf("result %+v, want ended by the SIGINT", res)
	}
}

// fieldAfter returns the number after prefix in out, or -1.
func fieldAfter(out, prefix string) int {
	_, rest, ok := strings.Cut(out, prefix)
	if !ok {
		return -1
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return -1
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return -1
	}
	return n
}
