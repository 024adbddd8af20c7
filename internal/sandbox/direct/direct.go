// Package direct is the unsandboxed backend: it runs the runner or a command
// as a plain child process, with a wall-time limit, an output cap and a
// killed process group, but none of the isolation of a sandbox. It exists for
// hosts without one and for comparison; callers must ask for it explicitly,
// and every result it produces is labelled "unsandboxed".
package direct

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/wire"
)

// Name is the backend's name in reports and results.
const Name = "unsandboxed"

// Defaults for limits a Spec leaves zero.
const (
	DefaultWall   = 2 * time.Minute
	DefaultOutput = 16 << 20
)

// Options configure the backend. A nil *Options uses the running executable.
type Options struct {
	// Executable and Args start the runner: Executable Args... (default:
	// this executable with "__runner").
	Executable string
	Args       []string
}

// Backend runs each Spec as a plain child process.
type Backend struct {
	exe  string
	args []string
}

// New returns a Backend.
func New(opts *Options) (*Backend, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("finding the airlock executable: %w", err)
		}
		o.Executable = exe
		o.Args = []string{"__runner"}
	}
	return &Backend{exe: o.Executable, args: o.Args}, nil
}

// Report says that this backend enforces no isolation.
func (b *Backend) Report() sandbox.Report {
	return sandbox.Report{Backend: Name, Unsandboxed: true, Features: []sandbox.Feature{
		{Name: "isolation", Available: false, Detail: "none: the call runs as a plain child process"},
		{Name: "wall-time limit", Available: true, Detail: "the process group is killed at the deadline"},
		{Name: "output cap", Available: true},
	}, Limits: []sandbox.LimitStatus{
		{Limit: sandbox.LimitTime, Enforced: true, Detail: "the process group is killed at the deadline"},
		{Limit: sandbox.LimitOutput, Enforced: true, Detail: "a result keeps at most the cap (a command's output its start and end); a command that writes 8 times the cap is killed with its process group"},
		{Limit: sandbox.LimitMemory, Detail: "not enforced without a sandbox"},
		{Limit: sandbox.LimitProcesses, Detail: "not enforced without a sandbox"},
		{Limit: sandbox.LimitFileSize, Detail: "not enforced without a sandbox"},
		{Limit: sandbox.LimitTmp, Detail: "not enforced without a sandbox (there is no private /tmp)"},
	}}
}

// unenforced are the limits of a Spec this backend does not hold.
var unenforced = []wire.Limit{sandbox.LimitMemory, sandbox.LimitProcesses, sandbox.LimitFileSize, sandbox.LimitTmp}

// Run runs spec as a child process.
func (b *Backend) Run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	start := time.Now()
	lim := spec.Limits
	if lim.Wall <= 0 {
		lim.Wall = DefaultWall
	}
	if lim.OutputBytes <= 0 {
		lim.OutputBytes = DefaultOutput
	}
	var cmd *exec.Cmd
	if len(spec.Command) > 0 {
		cmd = exec.Command(spec.Command[0], spec.Command[1:]...)
	} else {
		cmd = exec.Command(b.exe, b.args...)
	}
	cmd.Env = spec.Env
	cmd.Dir = spec.Cwd
	if spec.Stdin != nil {
		cmd.Stdin = spec.Stdin
	}
	setProcAttr(cmd)
	rOut, wOut, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating stdout pipe: %w", err)
	}
	defer rOut.Close()
	rErr, wErr, err := os.Pipe()
	if err != nil {
		wOut.Close()
		return nil, fmt.Errorf("creating stderr pipe: %w", err)
	}
	defer rErr.Close()
	cmd.Stdout, cmd.Stderr = wOut, wErr
	err = cmd.Start()
	wOut.Close()
	wErr.Close()
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	setup := time.Since(start)

	var (
		mu    sync.Mutex
		limit wire.Limit
	)
	kill := func(why wire.Limit) {
		mu.Lock()
		if limit == "" {
			limit = why
		}
		mu.Unlock()
		killGroup(cmd)
	}
	var wg sync.WaitGroup
	var truncOut, truncErr bool
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, truncOut, _ = sandbox.CopyCapped(spec.Stdout, rOut, lim.OutputBytes, func() { kill(sandbox.LimitOutput) })
	}()
	go func() {
		defer wg.Done()
		_, truncErr, _ = sandbox.CopyCapped(spec.Stderr, rErr, lim.OutputBytes, func() { kill(sandbox.LimitOutput) })
	}()
	timer := time.AfterFunc(lim.Wall, func() { kill(sandbox.LimitTime) })
	defer timer.Stop()
	// A cancelled call first gets SIGTERM, so the runner can end the process
	// groups its tool started; SIGKILL follows after a short grace.
	// The grace's SIGKILL must not outlive Run: once the group is gone its
	// number may be another process group's.
	var ended atomic.Bool
	stopCtx := context.AfterFunc(ctx, func() {
		termGroup(cmd)
		time.AfterFunc(500*time.Millisecond, func() {
			if !ended.Load() {
				killGroup(cmd)
			}
		})
	})
	defer stopCtx()
	if spec.Stop != nil {
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-spec.Stop:
				termGroup(cmd)
			case <-done:
			}
		}()
	}

	if spec.Signal != nil && len(spec.Command) > 0 {
		done := make(chan struct{})
		defer close(done)
		go func() {
			for {
				select {
				case s := <-spec.Signal:
					switch s {
					case syscall.SIGKILL:
						killGroup(cmd)
					case syscall.SIGTERM:
						termGroup(cmd)
					case syscall.SIGINT, syscall.SIGHUP:
						_ = cmd.Process.Signal(s)
					}
				case <-done:
					return
				}
			}
		}()
	}

	werr := cmd.Wait()
	// A grandchild holding the pipes must not hold the call: give the copies
	// a moment to drain, then kill the group and close the pipes, each once
	// it holds nothing unread (drain).
	copied := make(chan struct{})
	go func() { wg.Wait(); close(copied) }()
	select {
	case <-copied:
	case <-time.After(100 * time.Millisecond):
		killGroup(cmd)
		drain(copied, rOut, rErr)
	}
	killGroup(cmd) // nothing of the call outlives it
	ended.Store(true)
	res := &sandbox.Result{
		ExitCode:        cmd.ProcessState.ExitCode(),
		Signal:          signalOf(cmd.ProcessState),
		OutputTruncated: truncOut || truncErr,
		Isolation:       wire.Isolation{Backend: Name, Unsandboxed: true, Features: []string{}, Unenforced: append([]wire.Limit(nil), unenforced...)},
		Setup:           setup,
		Duration:        time.Since(start),
	}
	mu.Lock()
	res.Limit = limit
	mu.Unlock()
	if limit != "" {
		res.LimitsHit = []wire.Limit{limit}
	}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		return res, fmt.Errorf("waiting for %s: %w", cmd.Path, werr)
	}
	return res, nil
}

// drain waits until copied is closed, closing each pipe of ps once it
// holds nothing unread: a process that left the group (setsid) may hold a
// pipe open for ever, but what the command wrote before it ended is read
// whole, however slowly its reader takes it (a terminal, a full pipe, a
// copy that a loaded machine runs late). The pipes were closed at once,
// and what they still held was lost without a word. A pipe whose count
// cannot be read is closed at once, as before; so is every pipe still
// open after sandbox.OutputGrace, so that a process out of the group that
// keeps writing, or a reader that takes nothing, cannot hold the call.
func drain(copied <-chan struct{}, ps ...*os.File) {
	closed := make([]bool, len(ps))
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	grace := time.NewTimer(sandbox.OutputGrace)
	defer grace.Stop()
	late := false
	for {
		for i, p := range ps {
			if closed[i] {
				continue
			}
			if n, ok := unread(p); late || !ok || n == 0 {
				p.Close()
				closed[i] = true
			}
		}
		select {
		case <-copied:
			return
		case <-t.C:
		case <-grace.C:
			late = true
		}
	}
}

var _ sandbox.Backend = (*Backend)(nil)
