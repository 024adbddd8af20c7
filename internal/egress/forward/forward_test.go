package forward

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// unixServer listens on a fresh socket and runs fn for each connection.
func unixServer(t *testing.T, fn func(*net.UnixConn)) string {
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
			go fn(c)
		}
	}()
	return path
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
		sock := unixServer(t, func(c *net.UnixConn) {
			defer c.Close()
			b, _ := io.ReadAll(c)
			io.WriteString(c, "got "+string(b))
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
		sock := unixServer(t, func(c *net.UnixConn) {
			defer c.Close()
			io.WriteString(c, "hello")
			c.CloseWrite()
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

func TestForwardCancel(t *testing.T) {
	sock := unixServer(t, func(c *net.UnixConn) { io.Copy(io.Discard, c) })
	addr, cancel := start(t, sock)
	c := dial(t, addr)
	io.WriteString(c, "x")
	time.Sleep(50 * time.Millisecond)
	if err := cancel(); err != nil {
		t.Fatalf("Forward returned %v after cancel", err)
	}
	if _, err := io.ReadAll(c); err != nil {
		t.Fatalf("open connection not closed cleanly: %v", err)
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Fatal("listener still accepting after cancel")
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
