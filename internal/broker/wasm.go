package broker

import (
	"sync"

	"context"
	"encoding/json"
	"fmt"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/wire"
)

// WasmCall runs one call of a grant's wasm tool ([tools.wasm.NAME]) in a
// fresh instance of its module and reports how it ended (internal/wasm
// does the work; the CLI joins the two). g is the session's grant, with
// airlock's own files guarded (GuardGrant): the module's directories are
// judged by it, not by the grant the tools were loaded from, so the
// records directory and the grant files stay out of a wasm tool's reach
// as they stay out of a sandbox's. It must be safe for concurrent use.
type WasmCall func(ctx context.Context, g *grant.Grant, name string, args json.RawMessage) WasmOutcome

// WasmOutcome is how a wasm tool call ended.
type WasmOutcome struct {
	Stdout    []byte
	ExitCode  int
	Trap      string       // the wasm trap that ended it, if any
	LimitsHit []wire.Limit // wire.LimitTime, LimitMemory, LimitOutput, LimitDisk
	Omitted   int64        // output bytes past the cap
	Detail    string       // for the audit record: stderr, the trap's function
	Err       error        // the module could not be run at all
}

// wasmIsolation is what a wasm tool call runs under.
var wasmIsolation = wire.Isolation{Backend: "wasm", Features: []string{"wasi-preview1", "preopens-only", "no-sockets", "memory-pages", "wall-time", "fresh-instance"}}

// runWasm runs a call of a wasm tool: the checks every call gets (size,
// grant, audit, admission), then the module.
func (s *Session) runWasm(ctx context.Context, c *call, w grant.WasmTool, refuse func(grant.Decision, string) *Result) *Result {
	if n := len(c.args); n > s.opts.MaxCallBytes {
		return refuse(grant.Decision{Rule: "limits.call_bytes"}, fmt.Sprintf("the call's arguments are %d bytes; the most one call may carry is %d bytes", n, s.opts.MaxCallBytes))
	}
	n := int64(len(c.args))
	if s.inflight.Add(n) > int64(s.opts.MaxInFlightBytes) {
		s.inflight.Add(-n)
		return refuse(grant.Decision{Rule: "admission"}, "airlock is busy: the calls in flight carry too much; try again when they finish")
	}
	defer s.inflight.Add(-n)
	var obj map[string]json.RawMessage
	if len(c.args) > 0 && json.Unmarshal(c.args, &obj) != nil {
		return refuse(grant.Decision{Rule: "arguments"}, fmt.Sprintf("%s: the arguments must be a JSON object", c.tool))
	}
	if reason := s.wasmArgsFit(w, c.args); reason != "" {
		return refuse(grant.Decision{Rule: "arguments"}, fmt.Sprintf("%s: %s", c.tool, reason))
	}
	d := s.opts.Grant.Check(grant.Call{Tool: c.tool})
	if !d.Allowed {
		return refuse(d, "")
	}
	d.Rule += "; tools.wasm." + c.tool
	c.limits = w.Limits
	if err := s.live.Begin(audit.InFlight{Kind: audit.KindCall, CallID: c.id, Tool: c.tool}); err != nil {
		return refuse(grant.Decision{Rule: "audit"}, fmt.Sprintf("the audit records cannot be written (%v), so nothing runs; free space in the records directory", err))
	}
	c.begun = true
	if err := s.adm.wait(ctx, &s.seat, &s.waiting); err != nil {
		c.out = Outcome{Class: ClassCancelled, Output: failure(SentenceCancelled), Detail: "cancelled while queued"}
		return &Result{CallID: c.id, Class: ClassCancelled, Decision: d, Output: s.label(c.tool, c.out.Output, &wasmIsolation, true)}
	}
	s.running.Add(1)
	defer func() { s.running.Add(-1); s.adm.leave(&s.seat) }()

	args := c.args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	o := s.opts.WasmCall(ctx, s.opts.Grant, c.tool, args)
	res := &sandbox.Result{ExitCode: o.ExitCode, LimitsHit: o.LimitsHit, Isolation: wasmIsolation}
	out := wire.ToolOutput{Content: string(o.Stdout), IsError: o.ExitCode != 0}
	class := ClassOK
	switch {
	case o.Err != nil:
		class, out = ClassSandbox, failure(SentenceCannotRun)
		o.Detail = o.Err.Error()
	case ctx.Err() != nil && !hit(o.LimitsHit, wire.LimitTime):
		class, out = ClassCancelled, failure(SentenceCancelled)
	case hit(o.LimitsHit, wire.LimitTime):
		class, out = ClassTimeout, failure(SentenceTimeout)
		res.Limit = sandbox.LimitTime
	case hit(o.LimitsHit, wire.LimitDisk):
		class, out = ClassKilled, failure(SentenceDisk)
		res.Limit = sandbox.LimitDisk
	case hit(o.LimitsHit, wire.LimitMemory) && o.ExitCode != 0:
		class, out = ClassMemory, failure(SentenceMemory)
		res.Limit = sandbox.LimitMemory
	case o.Trap != "":
		class, out = ClassRunner, failure(SentenceCannotRun)
	case hit(o.LimitsHit, wire.LimitOutput):
		out.Truncated = true
		out.Meta.OmittedBytes = o.Omitted
		res.OutputTruncated = true
	}
	if out.IsError && out.Content == "" {
		out.Content = fmt.Sprintf("the tool failed (exit %d)", o.ExitCode)
	}
	out.Meta.LimitsHit = o.LimitsHit
	if res.Limit != "" {
		out.Meta.Limit = res.Limit
	}
	c.out = Outcome{Output: out, Class: class, Detail: s.secrets.redact().String(o.Detail), Result: res}
	iso := wasmIsolation
	return &Result{CallID: c.id, Class: class, Decision: d, Output: s.label(c.tool, out, &iso, class != ClassOK)}
}

func hit(list []wire.Limit, name wire.Limit) bool {
	for _, l := range list {
		if l == name {
			return true
		}
	}
	return false
}

// wasmSchemas holds each wasm tool's schema, resolved once per session.
type wasmSchemas struct {
	mu sync.Mutex
	m  map[string]wasmSchema
}

type wasmSchema struct {
	rs  *jsonschema.Resolved
	err error
}

// wasmArgsFit checks a wasm tool's arguments against the schema its grant
// declares (required fields, types, additionalProperties, ...), as the
// built-in tools check theirs, so the module meets only arguments of the
// shape its author declared and the model hears what did not fit. It
// returns why not, or "". A schema that cannot be used (a $ref to a
// document elsewhere, which is never fetched) refuses every call.
func (s *Session) wasmArgsFit(w grant.WasmTool, args json.RawMessage) string {
	rs, err := s.wasm.resolve(w)
	if err != nil {
		return fmt.Sprintf("the grant's schema of this tool cannot be used (tools.wasm.%s.schema): %v", w.Name, err)
	}
	var inst any = map[string]any{}
	if len(args) > 0 {
		if err := json.Unmarshal(args, &inst); err != nil {
			return "the arguments must be a JSON object"
		}
	}
	if err := rs.Validate(inst); err != nil {
		return fmt.Sprintf("the arguments do not fit the tool's schema: %v", err)
	}
	return ""
}

func (ws *wasmSchemas) resolve(w grant.WasmTool) (*jsonschema.Resolved, error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if r, ok := ws.m[w.Name]; ok {
		return r.rs, r.err
	}
	var sc jsonschema.Schema
	var r wasmSchema
	if r.err = json.Unmarshal(w.Schema, &sc); r.err == nil {
		r.rs, r.err = sc.Resolve(nil)
	}
	if ws.m == nil {
		ws.m = map[string]wasmSchema{}
	}
	ws.m[w.Name] = r
	return r.rs, r.err
}
