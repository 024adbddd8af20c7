package egress

import (
	"context"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

func TestListenUnix(t *testing.T) {
	dir := shortDir(t)
	path := filepath.Join(dir, "s.sock")
	for _, mode := range []os.FileMode{0, 0o666} {
		p := New(&Options{SocketMode: mode})
		l, err := p.ListenUnix(path)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		want := mode
		if want == 0 {
			want = 0o600
		}
		if fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != want {
			t.Fatalf("socket mode %v, want socket %v", fi.Mode(), want)
		}
		if l.Addr().String() != path {
			t.Fatalf("Addr %q", l.Addr())
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 {
			t.Fatalf("directory holds %d entries, want only the socket", len(entries))
		}
		l.Close()
		if _, err := os.Lstat(path); !os.IsNotExist(err) {
			t.Fatalf("socket not removed on Close: %v", err)
		}
	}
	// A regular file is never replaced.
	os.WriteFile(path, []byte("x"), 0o600)
	if _, err := New(nil).ListenUnix(path); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("ListenUnix over a file: %v", err)
	}
}

func TestControlCheck(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	pub := netip.MustParseAddr("93.184.216.34")
	tests := []struct {
		name    string
		v       *vetted
		address string
		ok      bool
	}{
		{"no vetted address", nil, "93.184.216.34:443", false},
		{"same public", &vetted{addr: pub}, "93.184.216.34:443", true},
		{"different address", &vetted{addr: pub}, "93.184.216.35:443", false},
		{"loopback not allowed", &vetted{addr: lo}, "127.0.0.1:443", false},
		{"loopback allowed", &vetted{addr: lo, private: true}, "127.0.0.1:443", true},
		{"mapped form", &vetted{addr: pub}, "[::ffff:93.184.216.34]:443", true},
		{"garbage", &vetted{addr: pub}, "x", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.v != nil {
				ctx = context.WithValue(ctx, vettedKey{}, *tt.v)
			}
			err := controlCheck(ctx, "tcp4", tt.address, nil)
			if (err == nil) != tt.ok {
				t.Fatalf("controlCheck = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

// TestDefaultDialerRefusesUnvetted dials through the real default dialer
// with no vetted address in the context: the Control hook stops it.
func TestDefaultDialerRefusesUnvetted(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p := New(nil)
	_, err = p.o.Dialer.DialContext(context.Background(), "tcp", l.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "no vetted address") {
		t.Fatalf("dial without vetting: %v", err)
	}
	ctx := context.WithValue(context.Background(), vettedKey{}, vetted{addr: netip.MustParseAddr("127.0.0.1")})
	_, err = p.o.Dialer.DialContext(ctx, "tcp", l.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("dial of loopback without an allowance: %v", err)
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

// Out of descriptors and the like are temporary: Serve backs off and keeps
// accepting.
func TestServeSurvivesTemporaryAcceptErrors(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		t.Run(errno.Error(), func(t *testing.T) {
			p := New(&Options{Policy: &fakePolicy{hosts: map[string]bool{}}})
			sock := filepath.Join(shortDir(t), "s")
			l, err := p.ListenUnix(sock)
			if err != nil {
				t.Fatal(err)
			}
			fl := &flakyListener{Listener: l, n: 5, err: &net.OpError{Op: "accept", Net: "unix", Err: os.NewSyscallError("accept4", errno)}}
			ctx, cancel := context.WithCancel(context.Background())
			var serr error
			ended := make(chan struct{})
			go func() { serr = p.Serve(ctx, fl); close(ended) }()
			t.Cleanup(func() { cancel(); <-ended })
			c, err := net.Dial("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			io.WriteString(c, "CONNECT x.test:443 HTTP/1.1\r\n\r\n")
			got := make(chan string, 1)
			go func() { b, _ := io.ReadAll(c); got <- string(b) }()
			select {
			case s := <-got:
				if !strings.HasPrefix(s, "HTTP/1.1 403 ") {
					t.Fatalf("answer %q, want a 403", s)
				}
			case <-ended:
				t.Fatalf("Serve gave up after a temporary accept error: %v", serr)
			}
		})
	}
}
