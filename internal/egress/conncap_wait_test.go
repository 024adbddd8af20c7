package egress

import (
	"io"
	"testing"
	"time"
)

// A connection that arrives while the cap is full waits for the place a
// closing connection gives back, rather than being closed with its request
// unread: after a burst, on a loaded machine, the goroutines of connections
// that just ended give their places back late, and the sandbox's next
// connection was reset (curl exit 56 in TestForwarderSurvivesABurst).
func TestConnCapWaitsForAPlace(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MaxConns = 1 })
	c1 := h.conn()
	socksOpen(t, c1, socksName("a.test", 7))
	h.next()

	c2 := h.conn()
	if _, err := c2.Write(cat(greeting, socksName("a.test", 7))); err != nil {
		t.Fatal(err)
	}
	early := make(chan error, 1)
	go func() {
		b := make([]byte, 2)
		_, err := io.ReadFull(c2, b)
		early <- err
	}()
	// c1 keeps its place until c2 has been answered or a while has passed;
	// only an answer (or an end) before c1 closes is a failure.
	select {
	case err := <-early:
		t.Fatalf("over the cap, c2 was answered or closed (%v) before a place came free", err)
	case <-time.After(300 * time.Millisecond):
	}
	c1.Close()
	if err := <-early; err != nil {
		t.Fatalf("c2, once c1 closed: %v; want the SOCKS greeting's reply", err)
	}
	if d := h.next(); !d.Allowed {
		t.Fatalf("c2's decision %+v, want allowed", d)
	}
}
