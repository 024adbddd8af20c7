package stats

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestBurstCountsFailures(t *testing.T) {
	var n atomic.Int64
	var fails Failures
	d := Burst(10, &fails, func() error {
		if n.Add(1)%2 == 0 {
			return errors.New("even")
		}
		time.Sleep(10 * time.Millisecond)
		return nil
	})
	if n.Load() != 10 || fails.N() != 5 || fails.First() == nil {
		t.Errorf("Burst ran %d calls, %d failures (first %v); want 10, 5, an error", n.Load(), fails.N(), fails.First())
	}
	if d < 10*time.Millisecond {
		t.Errorf("Burst took %v, want at least the slowest call (10ms)", d)
	}
}

func TestClosedLoopCountsOnlySuccesses(t *testing.T) {
	var n atomic.Int64
	var fails Failures
	r := ClosedLoop(2, 50*time.Millisecond, &fails, func() error {
		time.Sleep(time.Millisecond)
		if n.Add(1)%3 == 0 {
			return errors.New("third")
		}
		return nil
	})
	if r.Calls+fails.N() != int(n.Load()) || fails.N() == 0 || r.Calls == 0 || r.Concurrency != 2 {
		t.Errorf("ClosedLoop: %+v with %d failures of %d calls", r, fails.N(), n.Load())
	}
}
