package linux

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// logBuffer is a bytes.Buffer the backend's logger may write from several
// goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// prestartBackend is a backend whose debug log goes to the returned
// buffer, or the test is skipped.
func prestartBackend(t *testing.T) (*Backend, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	b, err := New(&Options{Executable: os.Args[0], Cgroups: CgroupsOptional,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b, logs
}

// prestartedNow waits for the init b's Prestart started and returns it.
func prestartedNow(t *testing.T, b *Backend) *prestarted {
	t.Helper()
	p := offered(b)
	if p == nil {
		t.Fatal("Prestart started no init")
	}
	<-p.done
	if p.x == nil {
		t.Fatal("the prestarted init did not start (see the backend's log)")
	}
	return p
}

// initOf returns the pid of p's init and its cgroup directories.
func initOf(p *prestarted) (pid int, dirs []string) {
	if p.x.cg != nil {
		dirs = append(dirs, p.x.cg.dirs...)
	}
	return p.x.c.proc.Pid, dirs
}

// offered returns the init b offers the next Run, if any.
func offered(b *Backend) *prestarted {
	b.preMu.Lock()
	defer b.preMu.Unlock()
	return b.pre
}

// checkGone fails the test unless the process pid has been reaped and the
// cgroup directories dirs are removed.
func checkGone(t *testing.T, what string, pid int, dirs []string) {
	t.Helper()
	if err := unix.Kill(pid, 0); !errors.Is(err, unix.ESRCH) {
		t.Errorf("%s: its init (pid %d) is still there: kill(0) = %v", what, pid, err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: its cgroup %s is still there (%v)", what, d, err)
		}
	}
}

// prestartSpec is a command's spec with memory limit mem, the writable
// tree dir and two protected paths in it that do not exist: a file and a
// directory, for which a sandbox needs placeholders.
func prestartSpec(mem int64, out *bytes.Buffer, dir string) *sandbox.Spec {
	return &sandbox.Spec{
		Command:      []string{"/bin/sh", "-c", "echo ran; cat /proc/self/status | grep ^CapEff; touch .bashrc .git/hooks 2>/dev/null || echo refused"},
		Env:          []string{"PATH=/usr/bin:/bin"},
		Mounts:       []sandbox.Mount{{Source: dir, Writable: true}},
		Cwd:          dir,
		ReadOnly:     []string{filepath.Join(dir, ".bashrc"), filepath.Join(dir, ".git")},
		ReadOnlyDirs: []string{filepath.Join(dir, ".git")},
		Limits:       sandbox.Limits{MemoryBytes: mem, AllowUnenforced: true},
		Stdout:       out, Stderr: out,
	}
}

// checkNoPlaceholder fails the test if dir's protected paths (see
// prestartSpec) exist.
func checkNoPlaceholder(t *testing.T, what, dir string) {
	t.Helper()
	for _, name := range []string{".bashrc", ".git"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %s is still in the tree (%v)", what, name, err)
		}
	}
}

// TestPrestartedInitRunsTheNextCall: the init Prestart starts is the one
// the next cold Run of the same limits builds its sandbox with, locked down
// as any other, and it is gone with its cgroup when the Run returns.
func TestPrestartedInitRunsTheNextCall(t *testing.T) {
	b, logs := prestartBackend(t)
	var out bytes.Buffer
	dir := t.TempDir()
	b.Prestart(prestartSpec(256<<20, &out, dir))
	p := prestartedNow(t, b)
	pid, dirs := initOf(p)
	if p.x.cg != nil {
		if limit, err := os.ReadFile(memoryLimitFile(p.x.cg)); err != nil || strings.TrimSpace(string(limit)) != "268435456" {
			t.Errorf("the prestarted init's cgroup has memory limit %q (%v), want the spec's 268435456", limit, err)
		}
	}
	res, err := b.Run(context.Background(), prestartSpec(256<<20, &out, dir))
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || !strings.Contains(out.String(), "ran") || !strings.Contains(out.String(), "refused") {
		t.Fatalf("exit %d, output %q", res.ExitCode, out.String())
	}
	if !strings.Contains(out.String(), "CapEff:\t0000000000000000") {
		t.Errorf("the command ran with capabilities: %q", out.String())
	}
	if want := fmt.Sprintf(`msg="sandbox ready" pid=%d `, pid); !strings.Contains(logs.String(), want) {
		t.Errorf("the call did not run in the prestarted init (pid %d); log:\n%s", pid, logs.String())
	}
	if offered(b) != nil {
		t.Error("the prestarted init is still offered after a Run took it")
	}
	checkGone(t, "after the call", pid, dirs)
	checkNoPlaceholder(t, "after the call", dir)
}

// TestPrestartedInitThatDoesNotFit: a Run whose limits are not those the
// init was prestarted for builds its own sandbox and stops the prestarted
// one; a later Run finds none.
func TestPrestartedInitThatDoesNotFit(t *testing.T) {
	b, logs := prestartBackend(t)
	var out bytes.Buffer
	dir := t.TempDir()
	b.Prestart(prestartSpec(256<<20, &out, dir))
	p := prestartedNow(t, b)
	pid, dirs := initOf(p)
	res, err := b.Run(context.Background(), prestartSpec(128<<20, &out, dir))
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("exit %d, output %q", res.ExitCode, out.String())
	}
	if strings.Contains(logs.String(), fmt.Sprintf(`msg="sandbox ready" pid=%d `, pid)) {
		t.Error("a call with another memory limit ran in the init prestarted for 256 MiB")
	}
	checkGone(t, "not taken", pid, dirs)
	checkNoPlaceholder(t, "not taken", dir)
}

// TestPrestartedInitClosed: an init no Run took is stopped by Close, with
// its cgroup, and Prestart starts nothing after Close; a second Prestart
// while one waits starts nothing either.
func TestPrestartedInitClosed(t *testing.T) {
	b, _ := prestartBackend(t)
	var out bytes.Buffer
	dir := t.TempDir()
	b.Prestart(prestartSpec(0, &out, dir))
	p := prestartedNow(t, b)
	b.Prestart(prestartSpec(0, &out, dir))
	if offered(b) != p {
		t.Error("a second Prestart replaced the init that waits")
	}
	pid, dirs := initOf(p)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	checkGone(t, "after Close", pid, dirs)
	checkNoPlaceholder(t, "after Close", dir)
	b.Prestart(prestartSpec(0, &out, dir))
	if offered(b) != nil {
		t.Error("Prestart started an init after Close")
	}
}

// memoryLimitFile is the file of cg's memory limit.
func memoryLimitFile(cg *cgroup) string {
	if cg.host.version == 2 {
		return cg.dirs[0] + "/memory.max"
	}
	return cg.dirs[0] + "/memory.limit_in_bytes"
}
