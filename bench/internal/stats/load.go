package stats

import (
	"sync"
	"time"
)

// Failures counts the calls of a burst or closed loop that failed, and keeps
// the first error. A failed call is counted, not fatal: that a sandbox fails
// under concurrency is itself a result.
type Failures struct {
	mu    sync.Mutex
	n     int
	first error
}

// Add counts one failed call, keeping the first error.
func (f *Failures) Add(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		f.first = err
	}
	f.n++
}

// N is the number of failed calls.
func (f *Failures) N() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// First is the first failure, or nil.
func (f *Failures) First() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.first
}

// Burst runs n copies of call at once and returns the time until all ended;
// failed calls are added to fails.
func Burst(n int, fails *Failures, call func() error) time.Duration {
	var wg sync.WaitGroup
	start := time.Now()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := call(); err != nil {
				fails.Add(err)
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// ClosedLoop runs workers closed loops of call until d has passed and counts
// the calls that succeeded; failed calls are added to fails.
func ClosedLoop(workers int, d time.Duration, fails *Failures, call func() error) Rate {
	var (
		mu    sync.Mutex
		calls int
		wg    sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if err := call(); err != nil {
					fails.Add(err)
					continue
				}
				mu.Lock()
				calls++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return NewRate(workers, calls, time.Since(start))
}
