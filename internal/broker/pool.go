package broker

import (
	"slices"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/tool"
)

// DefaultPool is the number of warm sandboxes a session keeps per shape
// when its backend can keep them and Options.Pool is zero. A warm sandbox
// waiting for its call holds nothing in the user's tree: the placeholders
// for missing protected and denied paths are made only when a call takes
// it (see the claim in internal/sandbox/linux/initproto), so every tree
// gets the pool.
const DefaultPool = 2

// pooler is a backend that keeps warm sandboxes: built ahead of time for
// a spec's shape, each used by one call (the Linux backend).
type pooler interface {
	// Pool holds the backend's pool at size warm sandboxes per shape until
	// release; the last holder's release drains it and waits for every
	// teardown in progress.
	Pool(size int) (release func())
	// Prewarm starts filling the pool for spec's shape.
	Prewarm(spec *sandbox.Spec) error
}

// openPool holds the backend's pool for the session and prewarms the
// shapes its tools will use. Sessions sharing a backend share its pool;
// the pool keeps one grant's shapes, so sessions over different grants
// sharing one backend take turns (correct, but mostly cold).
func (s *Session) openPool() {
	p, ok := s.opts.Backend.(pooler)
	if !ok {
		return
	}
	n := s.opts.Pool
	if n == 0 {
		n = DefaultPool
	}
	// No more per shape than calls run at once: one past those is never
	// taken before another is built, and the backend starts building
	// them all at once (an unbounded Pool, unbounded sandboxes).
	n = min(n, s.adm.max) // set once, by newAdmission
	s.releasePool = p.Pool(max(n, 0))
	if n <= 0 {
		return
	}
	// One spec per distinct limits and mounts of the sandboxed tools,
	// read_file and shell first: calls that need the egress proxy are
	// never pooled.
	type shape struct {
		limits   sandbox.Limits
		readOnly bool
	}
	var seen []shape
	names := []string{"read_file", "shell"}
	for _, d := range tool.All() {
		if !slices.Contains(names, d.Name) {
			names = append(names, d.Name)
		}
	}
	for _, name := range names {
		def, ok := tool.Lookup(name)
		if !ok || def.Broker || !s.opts.Grant.ToolEnabled(name) {
			continue
		}
		spec := s.toolSpec(def, s.opts.Grant.LimitsFor(name))
		sh := shape{spec.Limits, def.Hints.ReadOnly}
		if slices.Contains(seen, sh) || len(seen) == 4 {
			continue
		}
		seen = append(seen, sh)
		if err := p.Prewarm(spec); err != nil {
			s.logger.Warn("prewarming sandboxes", "tool", name, "err", err)
		}
	}
}

// closePool releases the session's hold on the backend's pool.
func (s *Session) closePool() {
	if s.releasePool != nil {
		s.releasePool()
	}
}
