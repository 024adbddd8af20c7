package linux

import (
	"runtime"
	"sync"
	"testing"
)

// TestTeardownsStartWhileWaiting: teardowns may start while another
// goroutine waits (sessions' calls while one session's pool is released);
// a sync.WaitGroup panicked there ("WaitGroup is reused before previous
// Wait has returned") and took `airlock serve` down (red team). A waiter
// waits for the teardowns begun before it, not for later ones.
func TestTeardownsStartWhileWaiting(t *testing.T) {
	var td teardowns
	first := td.start()
	waited := make(chan struct{})
	go func() {
		td.wait()
		close(waited)
	}()
	// The waiter has begun once the generation has moved on.
	for {
		td.mu.Lock()
		begun := td.gen == 1
		td.mu.Unlock()
		if begun {
			break
		}
		runtime.Gosched()
	}
	// Later teardowns, some still running when the first ends.
	var later []func()
	for range 3 {
		later = append(later, td.start())
	}
	first()
	<-waited // returns although later teardowns are running
	for _, done := range later {
		done()
	}
	td.wait() // nothing running: at once

	// Many starts, ends and waits at once (run with -race).
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 500 {
				td.start()()
			}
		}()
		go func() {
			defer wg.Done()
			for range 100 {
				td.wait()
			}
		}()
	}
	wg.Wait()
}
