package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/secret"
	"github.com/airlockhq/airlock/wire"
)

// ExecTool is the tool name of an Exec's audit record.
const ExecTool = "exec"

// Exec is a command a user runs in a fresh sandbox of the session's grant
// (airlock exec): its streams are the user's, not a model's, so nothing is
// captured, labelled or capped beyond Limits.
type Exec struct {
	// Command is the program and its arguments. Required.
	Command []string
	// Env is the sandbox's whole environment ("K=V"); nil means BaseEnv.
	// The audit record names the variables not in BaseEnv, never their
	// values.
	Env []string
	// Limits are the command's limits; Limits.Output caps its output.
	Limits grant.Limits
	// Stdin, Stdout and Stderr are the command's streams.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Signal carries signals for the command (see sandbox.Spec.Signal).
	Signal <-chan syscall.Signal
	// OnEgress receives each of the egress proxy's decisions, after the
	// audit record of it is written.
	OnEgress func(egress.Decision)
	// Attach, when set, sees the finished spec just before the sandbox is
	// built (a terminal to attach) and returns the context to run in and
	// what to undo once the sandbox is gone.
	Attach func(ctx context.Context, spec *sandbox.Spec) (context.Context, func(), error)
}

// Exec runs e in a fresh sandbox and writes its audit record, as Call does
// for a tool call. It returns the sandbox's result, and an error when the
// sandbox could not run the command (then the result may be nil), the
// session cannot take calls, or the record could not be written (then the
// command ran: the result is its outcome and the error wraps ErrAudit).
func (s *Session) Exec(ctx context.Context, e *Exec) (*sandbox.Result, error) {
	if e == nil || len(e.Command) == 0 {
		return nil, errors.New("broker: Exec needs a command")
	}
	ctx, leave, err := s.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer leave()

	c := &call{id: "call_" + randomHex(8), tool: ExecTool, start: time.Now(), limits: e.Limits}
	// The values of the environment are the user's (a token passed with
	// --env): the record names the variables only, and a value of four
	// bytes or more (a shorter one would blank ordinary text) that shows up
	// in the command or an error is redacted there too.
	hide := map[string]string{}
	var names []string
	for _, kv := range e.Env {
		if slices.Contains(BaseEnv, kv) {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		names = append(names, k)
		if len(v) >= 4 {
			hide["env:"+k] = v
		}
	}
	redact := secret.NewRedactor(hide)
	c.args, _ = json.Marshal(struct {
		Command []string `json:"command"`
		Env     []string `json:"env,omitempty"`
	}{e.Command, names})
	c.args = redact.Bytes(c.args)

	if err := s.live.Begin(audit.InFlight{Kind: audit.KindCall, CallID: c.id, Tool: c.tool}); err != nil {
		return nil, fmt.Errorf("the audit records cannot be written (%w), so nothing runs; free space in the records directory: %w", err, ErrAudit)
	}
	res, runErr := s.runExec(ctx, c, e)
	c.out = Outcome{Result: res, Class: execClass(ctx, res, runErr)}
	switch {
	case runErr != nil:
		c.out.Detail = runErr.Error()
	case res != nil && res.Signal != 0:
		c.out.Detail = fmt.Sprintf("killed by signal %d", res.Signal)
	}
	c.out.Detail = redact.String(c.out.Detail)
	out := &Result{CallID: c.id, Class: c.out.Class, Decision: grant.Decision{Allowed: true, Rule: "exec"}}
	if err := s.record(c, out); err != nil {
		if runErr != nil {
			return res, errors.Join(runErr, err)
		}
		return res, err
	}
	s.live.End(audit.InFlight{CallID: c.id})
	return res, runErr
}

// runExec builds e's spec, with an egress proxy when the grant names
// hosts, and runs it. It counts the command's output for the record.
func (s *Session) runExec(ctx context.Context, c *call, e *Exec) (*sandbox.Result, error) {
	spec := s.spec(e.Limits)
	spec.Command = e.Command
	// A command's output is the user's: its cap is the limit itself, with
	// no frame around it.
	spec.Limits.OutputBytes = e.Limits.Output
	if e.Env != nil {
		spec.Env = append([]string(nil), e.Env...)
	}
	out := &countingWriter{w: e.Stdout}
	spec.Stdin, spec.Stdout, spec.Stderr = e.Stdin, out, e.Stderr
	spec.Signal = e.Signal
	if s.opts.Grant.HasNetwork() {
		stopEgress, err := AttachEgress(ctx, s.opts.Grant, spec, s.egressOptions(c, e.OnEgress))
		if err != nil {
			return nil, err
		}
		defer stopEgress()
	}
	runCtx := ctx
	if e.Attach != nil {
		var (
			undo func()
			err  error
		)
		if runCtx, undo, err = e.Attach(ctx, spec); err != nil {
			return nil, err
		}
		defer undo()
	}
	res, err := s.opts.Backend.Run(runCtx, spec)
	if res != nil {
		c.bytesOut = int(out.n.Load())
	}
	return res, err
}

// execClass classifies an Exec's outcome for its record: a limit that
// ended it, a signal, a sandbox that could not run it; "ok" otherwise,
// whatever its exit status (which the record keeps).
func execClass(ctx context.Context, res *sandbox.Result, err error) wire.Class {
	switch {
	case err != nil && ctx.Err() != nil:
		return ClassCancelled
	case errors.Is(err, sandbox.ErrLost):
		return ClassLost
	case err != nil || res == nil:
		return ClassSandbox
	}
	switch res.Limit {
	case sandbox.LimitTime:
		return ClassTimeout
	case sandbox.LimitMemory:
		return ClassMemory
	case sandbox.LimitProcesses:
		return ClassProcesses
	case sandbox.LimitOutput:
		return ClassOutput
	}
	if res.Signal != 0 {
		return ClassKilled
	}
	return ClassOK
}

// countingWriter counts what passes through to w (nil discards).
type countingWriter struct {
	w io.Writer
	n atomic.Int64
}

// Unwrap returns the writer counted for, so that sandbox.Abandonable can
// tell one whose writes never wait (a file) from one that may.
func (c *countingWriter) Unwrap() io.Writer { return c.w }

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.w == nil {
		c.n.Add(int64(len(p)))
		return len(p), nil
	}
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}
