package stats

import (
	"sync"
	"sync/atomic"
	"time"
)

// Burst runs n copies of call at once and returns the time until all ended
// and the first error.
func Burst(n int, call func() error) (time.Duration, error) {
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	start := time.Now()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := call(); err != nil {
				once.Do(func() { first = err })
			}
		}()
	}
	wg.Wait()
	return time.Since(start), first
}

// ClosedLoop runs workers closed loops of call until d has passed, and counts the
// calls that completed.
func ClosedLoop(workers int, d time.Duration, call func() error) (Rate, error) {
	var (
		calls atomic.Int64
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	start := time.Now()
	deadline := start.Add(d)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if err := call(); err != nil {
					once.Do(func() { first = err })
					return
				}
				calls.Add(1)
			}
		}()
	}
	wg.Wait()
	return NewRate(workers, int(calls.Load()), time.Since(start)), first
}
