//go:build unix

package tool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/airlockhq/airlock/wire"
)

// eofGrace is how long the output pipe may stay open after the shell exits
// (a background grandchild holding it) before the process group is killed.
const eofGrace = 100 * time.Millisecond

// runCommand runs command with /bin/sh -c in its own process group, stdout and
// stderr on one pipe, and renders the result.
func runCommand(ctx context.Context, command, dir string, timeout time.Duration, maxOut int, starter func(func() error) error) wire.ToolOutput {
	r, w, err := os.Pipe()
	if err != nil {
		return Failure("the shell could not start: %v", errnoText(err))
	}
	defer r.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		w.Close()
		return Failure("the shell could not start: %v", errnoText(err))
	}
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Dir = dir
	cmd.Stdin = devnull
	cmd.Stdout = w // one write end for both: output stays in write order
	cmd.Stderr = w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if starter == nil {
		err = cmd.Start()
	} else if err = starter(cmd.Start); err != nil && cmd.Process != nil {
		// Started, but not where it had to be (outside its process
		// limit): it must not run.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}
	w.Close()
	devnull.Close()
	if err != nil {
		return Failure("field %q: the shell could not start: %v", "command", errnoText(err))
	}
	pgid := cmd.Process.Pid
	var killOnce sync.Once
	kill := func() { killOnce.Do(func() { syscall.Kill(-pgid, syscall.SIGKILL) }) }

	out := newHeadTail(maxOut)
	hard := ShellKillFactor * int64(maxOut)
	var overflow bool
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		p := make([]byte, 32<<10)
		for {
			n, err := r.Read(p)
			out.Write(p[:n])
			if out.total > hard {
				overflow = true
				kill()
				return
			}
			if err != nil {
				return
			}
		}
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var timedOut, cancelled bool
	select {
	case err = <-waited:
	case <-timer.C:
		timedOut = true
		kill()
		err = <-waited
	case <-ctx.Done():
		cancelled = true
		kill()
		err = <-waited
	}
	select {
	case <-readDone:
	case <-time.After(eofGrace):
		kill() // a leftover process still holds the pipe
		r.Close()
		<-readDone
	}
	return renderShell(out, err, shellEnd{
		timedOut: timedOut, timeout: timeout, overflow: overflow, hard: hard, cancelled: cancelled, ctxErr: ctx.Err(),
	})
}

// shellEnd is how a command ended, besides its wait status.
type shellEnd struct {
	timedOut  bool
	timeout   time.Duration
	overflow  bool
	hard      int64
	cancelled bool
	ctxErr    error
}

func renderShell(out *headTail, waitErr error, end shellEnd) wire.ToolOutput {
	var b strings.Builder
	b.WriteString(out.String())
	if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
		b.WriteByte('\n')
	}
	res := wire.ToolOutput{}
	if cut := out.cut(); cut > 0 {
		res.Truncated = true
		res.Meta.OmittedBytes = cut
	}
	var ee *exec.ExitError
	var signalled bool
	if errors.As(waitErr, &ee) {
		ws, ok := ee.Sys().(syscall.WaitStatus)
		signalled = ok && ws.Signaled()
	}
	if end.overflow && signalled {
		fmt.Fprintf(&b, "[output passed %d bytes; the command was killed]\n", end.hard)
		res.IsError = true
		res.Meta.Limit = wire.LimitOutput
	} else if end.overflow {
		// It exited on its own before the kill landed: say what is true,
		// not that it was killed.
		fmt.Fprintf(&b, "[output passed %d bytes; the rest was dropped]\n", end.hard)
		res.IsError = true
		res.Meta.Limit = wire.LimitOutput
	}
	if end.timedOut {
		fmt.Fprintf(&b, "[timed out after %gs]\n", end.timeout.Seconds())
		res.IsError = true
		res.Meta.Limit = wire.LimitTime
	}
	if end.cancelled {
		fmt.Fprintf(&b, "[stopped: %v]\n", end.ctxErr)
		res.IsError = true
	}
	switch {
	case waitErr == nil:
		code := 0
		res.Meta.ExitCode = &code
		b.WriteString("[exit 0]")
	case errors.As(waitErr, &ee):
		ws, _ := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			res.Meta.Signal = int(ws.Signal())
			res.IsError = true
			fmt.Fprintf(&b, "[killed by signal %d]", int(ws.Signal()))
		} else {
			code := ws.ExitStatus()
			res.Meta.ExitCode = &code
			fmt.Fprintf(&b, "[exit %d]", code)
		}
	default:
		res.IsError = true
		fmt.Fprintf(&b, "[the command could not be waited for: %v]", errnoText(waitErr))
	}
	res.Content = b.String()
	return res
}
