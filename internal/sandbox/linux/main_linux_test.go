package linux_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/runner"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
	"github.com/airlockhq/airlock/internal/sandbox/linux/inside"
	"github.com/airlockhq/airlock/internal/testenv"
)

// TestMain lets the test binary serve as the sandbox binary: run with
// "__sandbox" it is the init, with fakeRunner as the in-process tool.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == initproto.Arg {
		os.Exit(inside.Main(inside.Tool{Run: fakeRunner, Warm: runner.Warm}))
	}
	code := m.Run()
	if separateInit.dir != "" {
		os.RemoveAll(separateInit.dir)
	}
	os.Exit(code)
}

// separateInit is this test process's build of cmd/airlock-init.
var separateInit struct {
	once      sync.Once
	dir, path string
	err       error
}

// separateInitEnv names, for an unprivileged child that cannot build, the
// build of cmd/airlock-init its parent made.
const separateInitEnv = "AIRLOCK_TEST_SEPARATE_INIT"

// separateInitExe returns a build of the separately built init
// (cmd/airlock-init, without cgo), made once per test process in a directory every
// user may read.
func separateInitExe(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(separateInitEnv); p != "" {
		return p
	}
	separateInit.once.Do(func() {
		dir, err := os.MkdirTemp("", "airlock-init-test-")
		if err == nil {
			separateInit.dir = dir
			err = os.Chmod(dir, 0o755)
		}
		if err != nil {
			separateInit.err = err
			return
		}
		separateInit.path = dir + "/" + linux.InitCommand
		build := exec.Command("go", "build", "-o", separateInit.path, "github.com/airlockhq/airlock/cmd/airlock-init")
		build.Env = append(os.Environ(), "CGO_ENABLED=0") // as the README installs it
		if out, err := build.CombinedOutput(); err != nil {
			separateInit.err = fmt.Errorf("building %s: %w\n%s", linux.InitCommand, err, out)
		}
	})
	if separateInit.err != nil {
		t.Fatal(separateInit.err)
	}
	return separateInit.path
}

// fakeRunner answers "pong: <stdin>" and exits 7, so tool mode is visible.
func fakeRunner(ctx context.Context, start func(func() error) error, hidden, candidates []string, stdin io.Reader, stdout, stderr io.Writer) int {
	b, _ := io.ReadAll(stdin)
	if string(b) == "hidden" {
		// The placeholders the init gave the tool, one a line.
		io.WriteString(stdout, strings.Join(hidden, "\n"))
		return 0
	}
	if string(b) == "spawn-and-kill" {
		return spawnAndKill(stdout)
	}
	if frame, ok := strings.CutPrefix(string(b), "runner:"); ok {
		// The real runner, for benchmarks of real tools.
		return runner.RunStarting(ctx, start, hidden, candidates, strings.NewReader(frame), stdout, stderr)
	}
	if script, ok := strings.CutPrefix(string(b), "sh:"); ok {
		// A shell script run from the in-process tool, as the shell tool does.
		cmd := exec.Command("/bin/sh", "-c", script)
		cmd.Stdout, cmd.Stderr = stdout, stderr
		err := start(cmd.Start)
		if err == nil {
			err = cmd.Wait()
		}
		if err != nil {
			io.WriteString(stderr, err.Error())
			return 1
		}
		return 0
	}
	io.WriteString(stdout, "pong: "+string(b))
	io.WriteString(stderr, "env="+strings.Join(os.Environ(), ","))
	return 7
}

var (
	backendOnce sync.Once
	backendVal  *linux.Backend
	backendErr  error
)

// backend returns the shared backend for tests, skipping (or failing under
// AIRLOCK_REQUIRE_FEATURES=1) when the host cannot run it.
func backend(t testing.TB) *linux.Backend {
	t.Helper()
	backendOnce.Do(func() {
		backendVal, backendErr = linux.New(&linux.Options{Executable: os.Args[0], Cgroups: linux.CgroupsOptional})
	})
	if backendErr != nil {
		var mf *sandbox.MissingFeatureError
		if errors.As(backendErr, &mf) {
			testenv.RequireFeature(t, mf.Error())
		}
		t.Fatalf("New: %v", backendErr)
	}
	return backendVal
}

// out is the result of one sandboxed run.
type out struct {
	res            *sandbox.Result
	stdout, stderr string
}

// run runs spec and fails the test on a Go error.
func run(t testing.TB, spec *sandbox.Spec) out {
	t.Helper()
	o, err := tryRun(t, spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return o
}

// tryRun runs spec, accepting unenforced limits in an unprivileged run
// (see acceptUnenforced).
func tryRun(t testing.TB, spec *sandbox.Spec) (out, error) {
	t.Helper()
	if acceptUnenforced {
		spec.Limits.AllowUnenforced = true
	}
	var so, se bytes.Buffer
	spec.Stdout, spec.Stderr = &so, &se
	if spec.Env == nil {
		spec.Env = []string{"PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8"}
	}
	if spec.Limits.Wall == 0 {
		spec.Limits.Wall = 30 * time.Second
	}
	res, err := backend(t).Run(context.Background(), spec)
	return out{res: res, stdout: so.String(), stderr: se.String()}, err
}

// sh runs a shell script with the given mounts.
func sh(t testing.TB, script string, mounts ...sandbox.Mount) out {
	t.Helper()
	return run(t, &sandbox.Spec{Mounts: mounts, Command: []string{"/bin/sh", "-c", script}})
}

func TestEcho(t *testing.T) {
	o := sh(t, "echo hello; echo oops >&2; exit 3")
	if o.stdout != "hello\n" || o.stderr != "oops\n" || o.res.ExitCode != 3 {
		t.Fatalf("got stdout %q stderr %q exit %d", o.stdout, o.stderr, o.res.ExitCode)
	}
	t.Logf("isolation %+v setup %v", o.res.Isolation, o.res.Setup)
}

// spawnAndKill starts a process from one OS thread and kills it from
// another, as a multi-threaded runner does; it prints the kill's error.
func spawnAndKill(stdout io.Writer) int {
	started := make(chan *os.Process)
	go func() {
		runtime.LockOSThread()
		p, err := os.StartProcess("/bin/sleep", []string{"sleep", "987901"}, &os.ProcAttr{})
		if err != nil {
			io.WriteString(stdout, "start: "+err.Error())
			started <- nil
			return
		}
		started <- p
		select {} // keep this thread busy
	}()
	p := <-started
	if p == nil {
		return 1
	}
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		done <- p.Kill()
	}()
	err := <-done
	st, _ := p.Wait()
	io.WriteString(stdout, "kill: "+fmt.Sprint(err)+" state: "+st.String())
	return 0
}
