package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/wire"
)

// The fixed sentences the model reads when a call did not complete. Details
// go to the audit record and logs, never to the model.
const (
	SentenceTimeout   = "the tool ran past its time limit"
	SentenceMemory    = "the tool was stopped: it ran out of memory"
	SentenceProcesses = "the tool was stopped: it hit its process limit"
	SentenceOutput    = "the tool was stopped: its output passed the size limit"
	SentenceDisk      = "the tool was stopped: the disk it writes to was nearly full"
	SentenceKilled    = "the tool was stopped: it ran out of memory or was killed"
	SentenceCannotRun = "the tool could not run"
	SentenceCancelled = "the call was cancelled"
	// SentenceLost is said of a call in flight when its sandbox was lost
	// (remote hands that crashed or became unreachable) and the call may
	// not be run again.
	SentenceLost = "the sandbox running this call was lost; the outcome is unknown: the call may or may not have taken effect, so check before repeating it"
)

// Outcome classes recorded in the audit log: the wire contract's, defined
// there once (see wire.Class).
const (
	ClassOK        = wire.ClassOK
	ClassTimeout   = wire.ClassTimeout
	ClassMemory    = wire.ClassMemory
	ClassProcesses = wire.ClassProcesses
	ClassOutput    = wire.ClassOutput
	ClassKilled    = wire.ClassKilled
	ClassCancelled = wire.ClassCancelled
	ClassRunner    = wire.ClassRunner
	ClassSandbox   = wire.ClassSandbox
	ClassRefused   = wire.ClassRefused
	ClassLost      = wire.ClassLost
)

// An Outcome is a classified run of one call.
type Outcome struct {
	// Output is what the model reads.
	Output wire.ToolOutput
	// Class is one of the Class constants.
	Class wire.Class
	// Detail explains a failure for logs and the audit record (runner stderr,
	// Go error text); it never reaches the model.
	Detail string
	// Result is the backend's result, nil if the sandbox never ran.
	Result *sandbox.Result
}

// dispatch runs in through backend in a sandbox built from spec, and
// classifies the outcome. spec.Stdin, Stdout and Stderr are set here.
func dispatch(ctx context.Context, backend sandbox.Backend, spec *sandbox.Spec, in *wire.ToolInput) Outcome {
	payload, err := json.Marshal(in)
	if err != nil {
		return Outcome{Output: failure(SentenceCannotRun), Class: ClassRunner, Detail: "encoding tool input: " + err.Error()}
	}
	var frame, stdout, stderr bytes.Buffer
	if err := wire.WriteFrame(&frame, payload); err != nil {
		return Outcome{Output: failure(SentenceCannotRun), Class: ClassRunner, Detail: err.Error()}
	}
	spec.Stdin = &frame
	spec.Stdout = &stdout
	spec.Stderr = &limitedBuffer{max: 64 << 10, buf: &stderr}
	res, err := backend.Run(ctx, spec)
	if err != nil && ctx.Err() != nil {
		return Outcome{Output: failure(SentenceCancelled), Class: ClassCancelled, Detail: err.Error(), Result: res}
	}
	if errors.Is(err, sandbox.ErrLost) {
		return Outcome{Output: failure(SentenceLost), Class: ClassLost, Detail: err.Error(), Result: res}
	}
	if err != nil {
		o := Outcome{Output: failure(SentenceCannotRun), Class: ClassSandbox, Detail: err.Error(), Result: res}
		var mf *sandbox.MissingFeatureError
		if errors.As(err, &mf) {
			// A host that cannot isolate is the operator's to fix; the sentence
			// says what is missing, which is not secret.
			o.Output = failure(SentenceCannotRun + ": " + mf.Error())
		}
		return o
	}
	return classify(ctx, res, stdout.Bytes(), stderr.String())
}

// classify turns a backend result and the runner's streams into an Outcome.
func classify(ctx context.Context, res *sandbox.Result, stdout []byte, stderr string) Outcome {
	o := classifyRun(ctx, res, stdout, stderr)
	o.Output.Meta.LimitsHit = withLimit(res.LimitsHit, o.Output.Meta.Limit)
	return o
}

// limitOrder is the order LimitsHit names limits in (sandbox.Hits.Apply's).
var limitOrder = []wire.Limit{wire.LimitTime, wire.LimitMemory, wire.LimitProcesses, wire.LimitOutput, wire.LimitDisk}

// withLimit returns hit with l added when l is not among them: a limit the
// tool enforced itself inside the sandbox (shell's own timeout, its kill of
// a command far past the output cap), which the backend cannot see, is a
// limit the call hit too, for the label and the audit record alike. hit is
// not changed.
func withLimit(hit []wire.Limit, l wire.Limit) []wire.Limit {
	if l == "" || slices.Contains(hit, l) {
		return hit
	}
	out := append(slices.Clip(hit), l)
	rank := func(l wire.Limit) int {
		if i := slices.Index(limitOrder, l); i >= 0 {
			return i
		}
		return len(limitOrder)
	}
	slices.SortStableFunc(out, func(a, b wire.Limit) int { return rank(a) - rank(b) })
	return out
}

// classifyRun is classify before the limits hit are added to the output.
func classifyRun(ctx context.Context, res *sandbox.Result, stdout []byte, stderr string) Outcome {
	o := Outcome{Result: res, Detail: strings.TrimSpace(stderr)}
	switch res.Limit {
	case wire.LimitTime:
		o.Class, o.Output = ClassTimeout, failure(SentenceTimeout)
		o.Output.Meta.Limit = wire.LimitTime
		return o
	case wire.LimitMemory:
		o.Class, o.Output = ClassMemory, failure(SentenceMemory)
		o.Output.Meta.Limit = wire.LimitMemory
		return o
	case wire.LimitProcesses:
		o.Class, o.Output = ClassProcesses, failure(SentenceProcesses)
		o.Output.Meta.Limit = wire.LimitProcesses
		return o
	case wire.LimitOutput:
		o.Class, o.Output = ClassOutput, failure(SentenceOutput)
		o.Output.Meta.Limit = wire.LimitOutput
		return o
	case wire.LimitDisk:
		o.Class, o.Output = ClassKilled, failure(SentenceDisk)
		o.Output.Meta.Limit = wire.LimitDisk
		return o
	}
	if ctx.Err() != nil {
		o.Class, o.Output = ClassCancelled, failure(SentenceCancelled)
		return o
	}
	if res.Signal != 0 {
		o.Class, o.Output = ClassKilled, failure(SentenceKilled)
		o.Detail = strings.TrimSpace(fmt.Sprintf("killed by signal %d; %s", res.Signal, o.Detail))
		return o
	}
	if res.ExitCode != wire.ExitOK {
		o.Class, o.Output = ClassRunner, failure(SentenceCannotRun)
		o.Detail = strings.TrimSpace(fmt.Sprintf("runner exited %d (%s); %s", res.ExitCode, wire.ExitName(res.ExitCode), runnerError(stderr)))
		return o
	}
	frame, err := wire.ReadFrame(bytes.NewReader(stdout))
	if err == nil {
		err = wire.DecodeStrict(frame, &o.Output)
	}
	if err != nil {
		o.Class, o.Output = ClassRunner, failure(SentenceCannotRun)
		o.Detail = "reading the runner's output: " + err.Error()
		return o
	}
	o.Class = ClassOK
	// What the tool says for the audit record only never reaches the model.
	if d := o.Output.Detail; d != "" {
		if o.Detail != "" {
			d += "; " + o.Detail
		}
		o.Detail, o.Output.Detail = d, ""
	}
	return o
}

// runnerError extracts the error text from a runner's ErrorReport on stderr.
func runnerError(stderr string) string {
	var rep wire.ErrorReport
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if json.Unmarshal([]byte(line), &rep) == nil && rep.Error != "" {
			return rep.Error
		}
	}
	return strings.TrimSpace(stderr)
}

func failure(sentence string) wire.ToolOutput {
	return wire.ToolOutput{Content: sentence, IsError: true}
}

// limitedBuffer keeps the first max bytes written and drops the rest.
type limitedBuffer struct {
	max int
	buf *bytes.Buffer
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
