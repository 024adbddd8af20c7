//go:build unix

package forward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// unixServer listens on a fresh socket and, for each connection the
// forwarder hands over, runs fn on the connection it carries.
func unixServer(t *testing.T, fn func(net.Conn)) string {
	dir, err := os.MkdirTemp("", "fw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "s")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.AcceptUnix()
			if err != nil {
				return
			}
			go func() {
				h, err := receive(c)
				if err != nil {
					t.Errorf("receiving the handoff: %v", err)
					return
				}
				fn(h)
			}()
		}
	}()
	return path
}

// receive reads the forwarder's one message on c and returns the
// connection it carries; it closes c.
func receive(c *net.UnixConn) (net.Conn, error) {
	defer c.Close()
	b := make([]byte, 16)
	oob := make([]byte, syscall.CmsgSpace(4*4))
	n, oobn, _, _, err := c.ReadMsgUnix(b, oob)
	if err != nil {
		return nil, err
	}
	if n != 1 || b[0] != Handoff {
		return nil, fmt.Errorf("first read %q, want the one Handoff byte", b[:n])
	}
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("control messages %v, %w", msgs, err)
	}
	fds, err := syscall.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, fmt.Errorf("descriptors %v, %w", fds, err)
	}
	if rest, err := c.Read(b); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("after the handoff read %d bytes, %w; want EOF", rest, err)
	}
	f := os.NewFile(uintptr(fds[0]), "handed")
	defer f.Close()
	return net.FileConn(f)
}

func start(t *testing.T, sock string) (addr string, cancel func() error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Forward(ctx, l, sock) }()
	var once sync.Once
	var result error
	cancel = func() error {
		once.Do(func() {
			stop()
			select {
			case result = <-done:
			case <-time.After(5 * time.Second):
				t.Error("Forward did not return")
			}
		})
		return result
	}
	t.Cleanup(func() { cancel() })
	return l.Addr().String(), cancel
}

func dial(t *testing.T, addr string) *net.TCPConn {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c.(*net.TCPConn)
}

func TestForwardHalfClose(t *testing.T) {
	t.Run("client first", func(t *testing.T) {
		sock := unixServer(t, func(c net.Conn) {
			defer c.Close()
			b, _ := io.ReadAll(c)
			io.WriteString(c, "got "+string(b))
			c.(*net.TCPConn).CloseWrite()
		})
		addr, _ := start(t, sock)
		c := dial(t, addr)
		io.WriteString(c, "ping")
		c.CloseWrite()
		if b, err := io.ReadAll(c); err != nil || string(b) != "got ping" {
			t.Fatalf("read %q, %v", b, err)
		}
	})
	t.Run("server first", func(t *testing.T) {
		late := make(chan string, 1)
		sock := unixServer(t, func(c net.Conn) {
			defer c.Close()
			io.WriteString(c, "hello")
			c.(*net.TCPConn).CloseWrite()
			b, _ := io.ReadAll(c)
			late <- string(b)
		})
		addr, _ := start(t, sock)
		c := dial(t, addr)
		if b, err := io.ReadAll(c); err != nil || string(b) != "hello" {
			t.Fatalf("read %q, %v", b, err)
		}
		io.WriteString(c, "late")
		c.CloseWrite()
		if s := <-late; s != "late" {
			t.Fatalf("server got %q", s)
		}
	})
}

// Cancelling ends Forward and its listener; a connection already handed
// over is the proxy's, and the proxy still reaches the client through it.
func TestForwardCancel(t *testing.T) {
	handed := make(chan net.Conn, 1)
	sock := unixServer(t, func(c net.Conn) { handed <- c })
	addr, cancel := start(t, sock)
	c := dial(t, addr)
	h := handedOver(t, handed)
	defer h.Close()
	if err := cancel(); err != nil {
		t.Fatalf("Forward returned %v after cancel", err)
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Fatal("listener still accepting after cancel")
	}
	io.WriteString(h, "still yours")
	h.Close()
	if b, err := io.ReadAll(c); err != nil || string(b) != "still yours" {
		t.Fatalf("read %q, %v through the handed connection", b, err)
	}
}

// handedOver waits for the connection the server received, failing the test
// if none arrives (a forwarder that copies never sends one).
func handedOver(t *testing.T, ch <-chan net.Conn) net.Conn {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no connection was handed over")
		return nil
	}
}

// The forwarder sends the accepted connection itself: the proxy's end is the
// socket whose peer is the client's, and the forwarder keeps no copy (the
// proxy closing it is the client's EOF).
func TestForwardHandsOver(t *testing.T) {
	handed := make(chan net.Conn, 1)
	sock := unixServer(t, func(c net.Conn) { handed <- c })
	addr, _ := start(t, sock)
	c := dial(t, addr)
	h := handedOver(t, handed)
	if h.RemoteAddr().String() != c.LocalAddr().String() {
		t.Fatalf("handed connection's peer is %s, want the client %s", h.RemoteAddr(), c.LocalAddr())
	}
	h.Close()
	if b, err := io.ReadAll(c); err != nil || len(b) != 0 {
		t.Fatalf("after the proxy closed: read %q, %v; want EOF", b, err)
	}
}

func TestForwardNoProxy(t *testing.T) {
	addr, _ := start(t, filepath.Join(t.TempDir(), "absent"))
	c := dial(t, addr)
	if b, err := io.ReadAll(c); len(b) != 0 {
		t.Fatalf("read %q, %v", b, err)
	}
}

// TestImportsOnlyStdlib keeps the in-sandbox side small.
func TestImportsOnlyStdlib(t *testing.T) {
	out, err := goList()
	if err != nil {
		t.Skip("go list unavailable:", err)
	}
	for _, dep := range out {
		if dep != "" && !isStd(dep) {
			t.Errorf("forward imports %q", dep)
		}
	}
}

// flakyListener fails its first n Accepts with err, then accepts for real.
type flakyListener struct {
	net.Listener
	mu  sync.Mutex
	n   int
	err error
}

func (l *flakyListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if l.n > 0 {
		l.n--
		l.mu.Unlock()
		return nil, l.err
	}
	l.mu.Unlock()
	return l.Listener.Accept()
}

// Running out of descriptors (a burst of connections inside the sandbox)
// and the like are temporary: Forward backs off and keeps accepting.
func TestForwardSurvivesTemporaryAcceptErrors(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		t.Run(errno.Error(), func(t *testing.T) {
			sock := unixServer(t, func(c net.Conn) {
				defer c.Close()
				io.WriteString(c, "still here")
			})
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			fl := &flakyListener{Listener: l, n: 5, err: &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: os.NewSyscallError("accept4", errno)}}
			ctx, cancel := context.WithCancel(context.Background())
			var ferr error
			ended := make(chan struct{})
			go func() { ferr = Forward(ctx, fl, sock); close(ended) }()
			t.Cleanup(func() { cancel(); <-ended })
			c := dial(t, l.Addr().String())
			got := make(chan string, 1)
			go func() { b, _ := io.ReadAll(c); got <- string(b) }()
			select {
			case s := <-got:
				if s != "still here" {
					t.Fatalf("read %q through the forwarder", s)
				}
			case <-ended:
				t.Fatalf("Forward gave up after a temporary accept error: %v", ferr)
			}
		})
	}
}

func TestForwardStopsOnAPermanentAcceptError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fl := &flakyListener{Listener: l, n: 1, err: &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EINVAL)}}
	if err := Forward(context.Background(), fl, "/nonexistent"); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("Forward returned %v, want EINVAL", err)
	}
}
