package broker_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandbox"
)

// poolRecorder is a backend that keeps warm sandboxes, recording the pool
// size it is asked to keep; it runs nothing.
type poolRecorder struct {
	mu    sync.Mutex
	sizes []int
}

func (p *poolRecorder) Run(context.Context, *sandbox.Spec) (*sandbox.Result, error) {
	return nil, errors.New("poolRecorder runs nothing")
}
func (p *poolRecorder) Report() sandbox.Report { return sandbox.Report{Backend: "pool-recorder"} }
func (p *poolRecorder) Pool(size int) func() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sizes = append(p.sizes, size)
	return func() {}
}
func (p *poolRecorder) Prewarm(*sandbox.Spec) error { return nil }

// TestPoolBoundedByConcurrency: a session keeps no more warm sandboxes
// per shape than calls may run at once, however large Options.Pool is: a
// warm sandbox past those is never taken before another is built, and
// the Linux backend starts building every one of them at once (a Pool of
// 1<<40 would start as many sandboxes).
func TestPoolBoundedByConcurrency(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	for _, tc := range []struct{ pool, maxConcurrent, want int }{
		{1 << 40, 0, broker.DefaultMaxConcurrent},
		{1 << 20, 3, 3},
		{5, 16, 5},
		{0, 1, 1},
		{0, 0, broker.DefaultPool},
		{-1, 0, 0},
	} {
		b := &poolRecorder{}
		s := f.open(t, b, func(o *broker.Options) { o.Pool, o.MaxConcurrent = tc.pool, tc.maxConcurrent })
		s.Close()
		if len(b.sizes) != 1 || b.sizes[0] != tc.want {
			t.Errorf("Pool %d, MaxConcurrent %d: the backend was asked to keep %v warm sandboxes, want %d", tc.pool, tc.maxConcurrent, b.sizes, tc.want)
		}
	}
}
