package forward

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// busyProxy listens on a Unix socket whose accept queue holds one
// connection, fills it, and accepts nothing until drain is called: a proxy
// too busy (or too slow, on a loaded machine) to take the next handoff
// yet. drain then accepts the filler and hands the next connection's
// handed-over socket to the returned channel.
func busyProxy(t *testing.T) (path string, drain func() <-chan net.Conn) {
	path = filepath.Join(t.TempDir(), "s")
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil { // a queue of one
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "busy")
	l, err := net.FileListener(f) // a duplicate: the backlog stays
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	filler, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { filler.Close() })
	if c, err := net.Dial("unix", path); !errors.Is(err, syscall.EAGAIN) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("a second connect to the full queue: %v, want EAGAIN", err)
	}
	return path, func() <-chan net.Conn {
		ch := make(chan net.Conn, 1)
		go func() {
			first, err := l.Accept()
			if err != nil {
				return
			}
			first.Close()
			c, err := l.Accept()
			if err != nil {
				return
			}
			h, err := receive(c.(*net.UnixConn))
			if err != nil {
				t.Errorf("receiving the handoff: %v", err)
				return
			}
			ch <- h
		}()
		return ch
	}
}

// A proxy whose accept queue is full for a while (busy with a burst of
// handoffs, or slow on a loaded machine) delays a connection, never resets
// it: the forwarder's connect to the proxy's socket fails with EAGAIN
// then, and a forwarder that gave up closed the client's connection with
// its request unread, which the client saw as "connection reset by peer"
// (curl exit 56, TestForwarderSurvivesABurst on a loaded CI machine).
func TestForwardWaitsForABusyProxy(t *testing.T) {
	sock, drain := busyProxy(t)
	addr, _ := start(t, sock)
	c := dial(t, addr)
	if _, err := io.WriteString(c, "CONNECT a.test:443 HTTP/1.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	early := make(chan error, 1)
	go func() {
		var b [1]byte
		_, err := c.Read(b[:])
		early <- err
	}()
	// The proxy stays busy until the client's connection has ended or a
	// while has passed; only the first is a failure.
	select {
	case err := <-early:
		t.Fatalf("the client's connection ended (%v) while the proxy was busy", err)
	case <-time.After(300 * time.Millisecond):
	}
	h := handedOver(t, drain())
	defer h.Close()
	b := make([]byte, 64)
	h.SetDeadline(time.Now().Add(10 * time.Second))
	n, err := h.Read(b)
	if err != nil || string(b[:n]) != "CONNECT a.test:443 HTTP/1.1\r\n\r\n" {
		t.Fatalf("handed connection read %q, %v; want the client's request", b[:n], err)
	}
	io.WriteString(h, "x")
	if err := <-early; err != nil {
		t.Fatalf("client read after the handoff: %v", err)
	}
}
