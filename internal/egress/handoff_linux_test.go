package egress_test

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/egress/forward"
)

// proxyOnly runs the real proxy on a Unix socket, as the sandbox's init
// reaches it, and returns the socket's path, the decisions it reports and
// stop, which cancels Serve and fails the test unless Serve returns.
func proxyOnly(t *testing.T, opts egress.Options) (sock string, decisions chan egress.Decision, stop func()) {
	t.Helper()
	sock, decisions, serve, stop := proxyListening(t, opts)
	serve()
	return sock, decisions, stop
}

// proxyListening is proxyOnly with the proxy listening and not yet
// serving: connections wait in its backlog, their messages queued, until
// serve is called.
func proxyListening(t *testing.T, opts egress.Options) (sock string, decisions chan egress.Decision, serve, stop func()) {
	t.Helper()
	dir, err := os.MkdirTemp("", "egh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	decisions = make(chan egress.Decision, 16)
	opts.OnDecision = func(d egress.Decision) { decisions <- d }
	p := egress.New(&opts)
	sock = filepath.Join(dir, "p.sock")
	l, err := p.ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	served := false
	serve = func() {
		served = true
		go func() { p.Serve(ctx, l); close(done) }()
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if !served {
			l.Close()
			return
		}
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("Serve did not return after cancel")
		}
	}
	t.Cleanup(stop)
	return sock, decisions, serve, stop
}

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (a, b *net.TCPConn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

func fdOf(t *testing.T, c syscall.Conn) int {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fd int
	rc.Control(func(u uintptr) { fd = int(u) })
	return fd
}

// send dials sock and sends msg with fds attached, as the forwarder does.
func send(t *testing.T, sock string, msg []byte, fds ...int) *net.UnixConn {
	t.Helper()
	u, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	if _, _, err := u.WriteMsgUnix(msg, syscall.UnixRights(fds...), nil); err != nil {
		t.Fatal(err)
	}
	return u
}

// eof waits for r to end, failing the test if it ends otherwise than by EOF
// or not within a long deadline.
func eof(t *testing.T, what string, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	if b, err := io.ReadAll(c); err != nil && !strings.Contains(err.Error(), "reset") {
		t.Errorf("%s: read %q, %v; want it closed", what, b, err)
	}
}

// Whatever reaches the proxy's socket with descriptors attached — the
// payload can dial it itself — is refused unless it is exactly what the
// forwarder sends: the Handoff byte and one connected TCP socket. Every
// descriptor received is closed, and the refusal is a Decision.
func TestHandoffRefused(t *testing.T) {
	type sent struct {
		msg   []byte
		fds   []int
		peers []net.Conn // the far ends of sent TCP connections: each must see EOF
		mine  []net.Conn // the sent ends, closed once sent
	}
	cases := map[string]func(t *testing.T) sent{
		"pipe": func(t *testing.T) sent {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close(); w.Close() })
			return sent{msg: []byte{forward.Handoff}, fds: []int{int(r.Fd())}}
		},
		"udp socket": func(t *testing.T) sent {
			pc, err := net.ListenPacket("udp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { pc.Close() })
			return sent{msg: []byte{forward.Handoff}, fds: []int{fdOf(t, pc.(*net.UDPConn))}}
		},
		"listening tcp socket": func(t *testing.T) sent {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			return sent{msg: []byte{forward.Handoff}, fds: []int{fdOf(t, l.(*net.TCPListener))}}
		},
		"unconnected tcp socket": func(t *testing.T) sent {
			fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { syscall.Close(fd) })
			return sent{msg: []byte{forward.Handoff}, fds: []int{fd}}
		},
		"unix stream socket": func(t *testing.T) sent {
			fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { syscall.Close(fds[0]); syscall.Close(fds[1]) })
			return sent{msg: []byte{forward.Handoff}, fds: fds[:1]}
		},
		"two tcp connections": func(t *testing.T) sent {
			a, pa := tcpPair(t)
			b, pb := tcpPair(t)
			return sent{msg: []byte{forward.Handoff}, fds: []int{fdOf(t, a), fdOf(t, b)}, peers: []net.Conn{pa, pb}, mine: []net.Conn{a, b}}
		},
		"tcp connection with another byte": func(t *testing.T) sent {
			a, pa := tcpPair(t)
			return sent{msg: []byte{5}, fds: []int{fdOf(t, a)}, peers: []net.Conn{pa}, mine: []net.Conn{a}}
		},
		"tcp connection with a request": func(t *testing.T) sent {
			a, pa := tcpPair(t)
			return sent{msg: []byte("\x00GET / HTTP/1.1\r\n\r\n"), fds: []int{fdOf(t, a)}, peers: []net.Conn{pa}, mine: []net.Conn{a}}
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			sock, decisions, _ := proxyOnly(t, egress.Options{Policy: loopbackPolicy{}, Resolver: fixtureResolver{}})
			s := mk(t)
			u := send(t, sock, s.msg, s.fds...)
			// Only the proxy's copies keep the sent connections open now.
			for _, c := range s.mine {
				c.Close()
			}
			eof(t, "the Unix connection", u)
			for i, p := range s.peers {
				eof(t, "sent connection "+string(rune('0'+i)), p)
			}
			select {
			case d := <-decisions:
				if d.Allowed || !strings.Contains(d.Reason, "bad connection handoff") {
					t.Errorf("decision %+v, want a refused handoff", d)
				}
			case <-time.After(20 * time.Second):
				t.Error("no decision reported")
			}
		})
	}
}

// A payload that sends a connection of its own keeps a descriptor of the same
// open socket, and can make it blocking after the proxy set it non-blocking.
// The proxy must neither wait past its handshake timeout nor outlive the
// sandbox on such a socket: plain reads and writes would block a broker
// thread until the payload sent a byte.
func TestHandoffBlockingDescriptor(t *testing.T) {
	port, _ := tcpServer(t, tcpEcho)
	sock, _, stop := proxyOnly(t, egress.Options{
		Policy: loopbackPolicy{port: port}, Resolver: fixtureResolver{},
		HandshakeTimeout: 500 * time.Millisecond,
	})
	// unblock makes the shared open socket blocking again, once the proxy
	// has taken it over (it answered on it).
	unblock := func(fd int) {
		if err := syscall.SetNonblock(fd, false); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("handshake timeout", func(t *testing.T) {
		mine, peer := tcpPair(t)
		send(t, sock, []byte{forward.Handoff}, fdOf(t, mine))
		peer.SetDeadline(time.Now().Add(20 * time.Second))
		peer.Write([]byte{5, 1, 0})
		reply := make([]byte, 2)
		if _, err := io.ReadFull(peer, reply); err != nil {
			t.Fatalf("no SOCKS greeting reply: %v", err)
		}
		unblock(fdOf(t, mine))
		// No request follows: the proxy must give up on its own.
		eof(t, "the handed connection", peer)
	})

	t.Run("sandbox ends mid-tunnel", func(t *testing.T) {
		mine, peer := tcpPair(t)
		send(t, sock, []byte{forward.Handoff}, fdOf(t, mine))
		peer.SetDeadline(time.Now().Add(20 * time.Second))
		if rep := socksConnect(t, peer, "fixture.test", port); rep != 0 {
			t.Fatalf("REP %#x", rep)
		}
		peer.Write([]byte("x"))
		one := make([]byte, 1)
		if _, err := io.ReadFull(peer, one); err != nil {
			t.Fatalf("no echo through the tunnel: %v", err)
		}
		unblock(fdOf(t, mine))
		stop() // fails the test unless Serve returns
		eof(t, "the handed connection", peer)
	})
}
