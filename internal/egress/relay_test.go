package egress

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

func TestHalfClose(t *testing.T) {
	t.Run("client first", func(t *testing.T) {
		h := newHarness(t, nil)
		h.dial.serve = func(c net.Conn) {
			defer c.Close()
			b, _ := io.ReadAll(c) // ends only when the client's EOF is passed on
			io.WriteString(c, "got "+string(b))
		}
		c := h.conn()
		socksOpen(t, c, socksName("a.test", 7))
		io.WriteString(c, "ping")
		c.CloseWrite()
		b, err := io.ReadAll(c)
		if err != nil || string(b) != "got ping" {
			t.Fatalf("read %q, %v", b, err)
		}
	})
	t.Run("upstream first", func(t *testing.T) {
		h := newHarness(t, nil)
		late := make(chan string, 1)
		h.dial.serve = func(c net.Conn) {
			defer c.Close()
			io.WriteString(c, "hello")
			c.(*net.UnixConn).CloseWrite()
			b, _ := io.ReadAll(c)
			late <- string(b)
		}
		c := h.conn()
		socksOpen(t, c, socksName("a.test", 7))
		b, err := io.ReadAll(c) // EOF arrives while our side is still open
		if err != nil || string(b) != "hello" {
			t.Fatalf("read %q, %v", b, err)
		}
		io.WriteString(c, "late")
		c.CloseWrite()
		select {
		case s := <-late:
			if s != "late" {
				t.Fatalf("upstream got %q", s)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("upstream never got the late bytes")
		}
	})
}

func TestIdleTimeout(t *testing.T) {
	const idle = 300 * time.Millisecond
	h := newHarness(t, func(o *Options) { o.IdleTimeout = idle })
	h.dial.serve = func(c net.Conn) { io.Copy(io.Discard, c); c.Close() }
	c := h.conn()
	socksOpen(t, c, socksName("a.test", 80))

	// Traffic one way only keeps the whole tunnel open. Every bound is
	// measured from events, never from a window: the tunnel may be closed
	// only once a whole IdleTimeout passed after the start of the last
	// write (the proxy saw that byte no earlier), so a slow machine can
	// only make it close later, never fail the test.
	closed := make(chan time.Time, 1)
	go func() {
		io.ReadAll(c)
		closed <- time.Now()
	}()
	var last time.Time
	for i := 0; i < 16; i++ {
		select {
		case at := <-closed:
			if gap := at.Sub(last); gap < idle {
				t.Fatalf("an active tunnel was closed as idle %v after its last byte (idle timeout %v)", gap, idle)
			}
			// The machine stalled longer than the timeout between two
			// writes: the tunnel was idle, and closing it was right.
			t.Skipf("writes were %v apart on this loaded machine, past the idle timeout", at.Sub(last))
		default:
		}
		last = time.Now()
		if _, err := io.WriteString(c, "tick"); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		time.Sleep(idle / 6)
	}
	select {
	case at := <-closed:
		if d := at.Sub(last); d < idle {
			t.Fatalf("closed %v after the last byte was written, before the idle timeout (%v)", d, idle)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("idle tunnel never closed")
	}
}

func TestConnCap(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MaxConns = 2 })
	c1 := h.conn()
	socksOpen(t, c1, socksName("a.test", 7))
	c2 := h.conn()
	socksOpen(t, c2, socksName("a.test", 7))
	h.next()
	h.next()

	c3 := h.conn()
	c3.Write(cat(greeting, socksName("a.test", 7)))
	b, _ := io.ReadAll(c3)
	if len(b) != 0 {
		t.Fatalf("over the cap, got %q", b)
	}
	if d := h.next(); d.Allowed || !strings.Contains(d.Reason, "cap of 2") {
		t.Fatalf("Decision = %+v", d)
	}
	assertEcho(t, c1, "bye") // frees a slot once the tunnel ends
	deadline := time.Now().Add(5 * time.Second)
	for {
		c4 := h.conn()
		c4.Write(cat(greeting, socksName("a.test", 7)))
		buf := make([]byte, 2)
		if _, err := io.ReadFull(c4, buf); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("slot never freed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
