package inside

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/sandbox/linux/eintr"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

// runPayload starts the command and acts as init until it exits: it reaps
// every child (orphans are re-parented to PID 1), forwards SIGINT and SIGHUP
// to the command and SIGTERM to every process of the sandbox; after a
// SIGTERM it waits for all of them, not only the command, before exiting.
// When it returns, PID 1 exits and the kernel kills everything left in the
// PID namespace.
//
// Landlock gave each of the init's threads its own domain (restrict_self
// runs per thread), and a scoped domain may not signal a sibling domain: so
// the command is started, and every signal sent, from one locked thread,
// whose domain the command's processes inherit.
// sigs already receives SIGTERM, SIGINT and SIGHUP.
func runPayload(cfg *initproto.Config, status *os.File, sigs chan os.Signal) int {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	path, err := exec.LookPath(cfg.Command[0])
	if err != nil && !errors.Is(err, exec.ErrDot) {
		// 127 for a command that is not there, 126 for one that is and
		// cannot run (no execute permission, a directory), as sh says.
		fmt.Fprintf(os.Stderr, "airlock: %v\n", err)
		code := 126
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			code = 127
		}
		report(status, code, 0)
		return code
	}
	// The reaper gets its thread now: once the payload runs it may hold
	// every process the limit allows, and a thread made then would fail
	// (pthread_create: EAGAIN) and abort the init.
	var stopping atomic.Bool
	ended := make(chan [2]int, 1) // exit code, signal
	pids, ready := make(chan int), make(chan struct{})
	go func() {
		close(ready)
		if pid, ok := <-pids; ok {
			reap(pid, &stopping, ended)
		}
	}()
	<-ready
	defer close(pids)
	wd, _ := os.Getwd()
	var p *os.Process
	err = inPayloadCgroup(cfg, func() error {
		var err error
		p, err = os.StartProcess(path, cfg.Command, &os.ProcAttr{
			Dir:   wd,
			Env:   os.Environ(),
			Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		})
		return err
	})
	var cgErr *payloadCgroupError
	if errors.As(err, &cgErr) {
		if p != nil {
			_ = p.Kill()
		}
		fmt.Fprintf(os.Stderr, "airlock: %v\n", err)
		report(status, 125, 0)
		return 125
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "airlock: starting %s: %v\n", cfg.Command[0], err)
		code := 126
		if errors.Is(err, os.ErrNotExist) {
			code = 127
		}
		report(status, code, 0)
		return code
	}
	pids <- p.Pid
	for {
		select {
		case s := <-sigs:
			if s == syscall.SIGTERM {
				// SIGTERM is a stop: every process of the sandbox hears
				// it, not only the command, so a double-forked daemon can
				// shut down cleanly too. kill(-1) from PID 1 spares PID 1.
				stopping.Store(true)
				_ = unix.Kill(-1, unix.SIGTERM)
				continue
			}
			_ = p.Signal(s)
		case e := <-ended:
			report(status, e[0], e[1])
			return e[0]
		}
	}
}

// reap reaps every child until the command has ended (and, once stopping,
// until no process is left), then sends the command's exit code and signal.
// An error from wait4 before the command ended is exit code 125.
func reap(cmd int, stopping *atomic.Bool, ended chan<- [2]int) {
	code, sig, exited := 0, 0, false
	for {
		var ws unix.WaitStatus
		pid, err := eintr.Value(func() (int, error) { return unix.Wait4(-1, &ws, 0, nil) })
		if err != nil {
			if !exited {
				code = 125
			}
			break // with exited: stopping, and every process is gone
		}
		if pid == cmd {
			switch {
			case ws.Exited():
				code, exited = ws.ExitStatus(), true
			case ws.Signaled():
				code, sig, exited = 128+int(ws.Signal()), int(ws.Signal()), true
			}
		}
		// After a stop, the others get their grace too (the host kills the
		// sandbox when it ends); otherwise the command's end is the
		// sandbox's.
		if exited && !stopping.Load() {
			break
		}
	}
	ended <- [2]int{code, sig}
}

func report(status *os.File, code, sig int) {
	_ = send(status, &initproto.Status{Exit: true, Code: code, Signal: sig})
	status.Close()
}

// payloadCgroupError is a failure to place the command in its cgroup: the
// sandbox does not run it without its process limit.
type payloadCgroupError struct{ err error }

func (e *payloadCgroupError) Error() string {
	return "placing the command in its cgroup: " + e.err.Error()
}

func (e *payloadCgroupError) Unwrap() error { return e.err }

// inPayloadCgroup runs start (which forks the command) with the calling
// thread, alone, in the payload cgroup, so the command is born there, then
// sets the payload's pids.max to the command's limit and brings the thread
// back to the sandbox's cgroup; it closes the three cgroup files. The
// caller is locked to its thread (cgroup v1 "tasks" moves one thread), and
// while it is locked the Go runtime makes new threads from its template
// thread, which stays outside: no thread of the init is ever made in the
// payload cgroup. While the thread is in, it holds the one extra process
// the host allowed the payload for it (see the host's cgroup). Without a
// payload cgroup (cfg.PayloadPids 0) it only calls start.
func inPayloadCgroup(cfg *initproto.Config, start func() error) error {
	if cfg.PayloadPids <= 0 {
		return start()
	}
	enter := os.NewFile(initproto.PayloadTasksFD, "the payload cgroup's tasks")
	max := os.NewFile(initproto.PayloadPidsFD, "the payload cgroup's pids.max")
	home := os.NewFile(initproto.InitTasksFD, "the sandbox cgroup's tasks")
	defer enter.Close()
	defer max.Close()
	defer home.Close()
	write := func(f *os.File, v int) error {
		// 0 is the writing thread.
		if _, err := f.WriteString(strconv.Itoa(v)); err != nil {
			return &payloadCgroupError{fmt.Errorf("writing %s: %w", f.Name(), err)}
		}
		return nil
	}
	if err := write(enter, 0); err != nil {
		return err
	}
	serr := start()
	return errors.Join(serr, write(max, cfg.PayloadPids), write(home, 0))
}

// payloadStart starts a tool's command (tool mode) in the payload cgroup:
// the first start goes through inPayloadCgroup from a thread locked for it;
// a tool call starts one command, so a second start is refused where there
// is a payload cgroup (it would run outside the call's process limit).
type payloadStart struct {
	mu   sync.Mutex
	cfg  *initproto.Config
	used bool // the payload cgroup's files are used or closed
}

func (p *payloadStart) start(start func() error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used {
		if p.cfg.PayloadPids > 0 {
			return errors.New("a tool call starts one command: its process limit's cgroup is taken")
		}
		return start()
	}
	p.used = true
	runtime.LockOSThread()
	err := inPayloadCgroup(p.cfg, start)
	var cgErr *payloadCgroupError
	if !errors.As(err, &cgErr) {
		// Back in the sandbox's cgroup: the thread may serve others.
		runtime.UnlockOSThread()
	}
	// Else the thread may still be in the payload cgroup: it stays locked,
	// and the runtime ends it with its goroutine.
	return err
}

// close closes the payload cgroup's files if no command took them.
func (p *payloadStart) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.used {
		p.used = true
		closePayloadCgroup(p.cfg)
	}
}

// closePayloadCgroup closes the payload cgroup's files when the init runs
// no command (tool mode).
func closePayloadCgroup(cfg *initproto.Config) {
	if cfg.PayloadPids > 0 {
		for _, fd := range []int{initproto.PayloadTasksFD, initproto.PayloadPidsFD, initproto.InitTasksFD} {
			unix.Close(fd)
		}
	}
}
