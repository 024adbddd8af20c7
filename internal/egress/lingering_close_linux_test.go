package egress_test

import (
	"context"
	"errors"
	"net"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/egress/forward"
)

// lingeringPair returns both ends of a loopback TCP connection as raw
// descriptors: x has sent more than y will take (y never reads), so a FIN
// from x waits behind those bytes, and x has SO_LINGER set for a very long
// time, so that the last close of x waits for y to read or reset. The test
// closes y at its end, which ends any such wait.
func lingeringPair(t *testing.T) (x, y int) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	l, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	must(err)
	defer syscall.Close(l)
	must(syscall.SetsockoptInt(l, syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1))
	must(syscall.Bind(l, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	must(syscall.Listen(l, 1))
	sa, err := syscall.Getsockname(l)
	must(err)
	x, err = syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	must(err)
	must(syscall.SetsockoptInt(x, syscall.SOL_SOCKET, syscall.SO_SNDBUF, 1))
	must(syscall.Connect(x, sa))
	y, _, err = syscall.Accept4(l, syscall.SOCK_CLOEXEC)
	must(err)
	t.Cleanup(func() { syscall.Close(y) })
	must(syscall.SetNonblock(x, true))
	buf := make([]byte, 64<<10)
	for range 3 {
		for {
			if _, err := syscall.Write(x, buf); err != nil {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	must(syscall.SetNonblock(x, false))
	must(syscall.SetsockoptLinger(x, syscall.SOL_SOCKET, syscall.SO_LINGER, &syscall.Linger{Onoff: 1, Linger: 1 << 30}))
	return x, y
}

// stopWithin cancels the proxy and fails the test unless Serve returns
// within d.
func stopWithin(t *testing.T, stop func(), d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("Serve did not return within %v of the sandbox's end: a close of a lingering socket holds a broker thread", d)
	}
}

// noCloseStuck fails the test unless, within d, no goroutine is in a close
// of a descriptor: one left waiting there holds an OS thread of the broker
// (and the sockets) for good, even when Serve has returned (a connection
// closed by a context.AfterFunc is closed by a goroutine no one waits for).
func noCloseStuck(t *testing.T, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		var stuck []string
		for _, g := range strings.Split(stacks, "\n\n") {
			if strings.Contains(g, "(*FD).destroy") || strings.Contains(g, "syscall.Close(") || strings.Contains(g, "unix.Close(") {
				stuck = append(stuck, g)
			}
		}
		if len(stuck) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines still closing a descriptor %v after the sandbox's end (a lingering socket holds their threads):\n%s", len(stuck), d, strings.Join(stuck, "\n\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A payload that hands the proxy a socket of its own with SO_LINGER set, and
// whose FIN cannot leave (its peer never reads), then closes its own copy,
// leaves the proxy the last close: close(2) would wait for the peer, holding
// a broker thread, the connection's slot and Serve — and so the end of the
// call — for as long as the peer stays open (forever when the peer is a
// descriptor the proxy holds too).
func TestHandedLingeringSocketDoesNotHoldTheProxy(t *testing.T) {
	sock, _, serve, stop := proxyListening(t, egress.Options{
		Policy: loopbackPolicy{}, Resolver: fixtureResolver{},
		HandshakeTimeout: 300 * time.Millisecond,
	})
	x, _ := lingeringPair(t)
	send(t, sock, []byte{forward.Handoff}, x)
	// The test's copy is closed before the proxy serves: had the proxy's
	// handshake timed out first (a test stalled 300 ms on a loaded
	// machine), the test's close was the last, and waited for ever.
	syscall.Close(x)
	serve()
	time.Sleep(time.Second) // the handshake times out and the proxy closes x
	stopWithin(t, stop, 30*time.Second)
	noCloseStuck(t, 20*time.Second)
}

// Descriptors a payload sends on the Unix connection after its first
// message are not received by a plain read or splice: the kernel closes
// them in the reading thread, or, still queued, in the thread that closes
// the connection. A lingering socket among them, whose peer is closed only
// after it, would hold that thread for good.
func TestDescriptorsInFlightDoNotHoldTheProxy(t *testing.T) {
	for _, order := range []string{"xy", "yx"} {
		t.Run(order, func(t *testing.T) {
			// An upstream that never reads, so the relay stops reading the
			// Unix connection and what the payload sends next stays queued.
			lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
				c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1) })
				return nil
			}}
			sl, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sl.Close() })
			go func() {
				for {
					c, err := sl.Accept()
					if err != nil {
						return
					}
					t.Cleanup(func() { c.Close() })
				}
			}()
			port := sl.Addr().(*net.TCPAddr).Port
			sock, _, stop := proxyOnly(t, egress.Options{
				Policy: loopbackPolicy{port: port}, Resolver: fixtureResolver{},
				SocketBuffer: 16 << 10,
			})
			u, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { u.Close() })
			u.SetWriteBuffer(4 << 10)
			u.SetDeadline(time.Now().Add(20 * time.Second))
			if rep := socksConnect(t, u, "fixture.test", port); rep != 0 {
				t.Fatalf("REP %#x", rep)
			}
			// Fill the tunnel until the relay stops taking bytes.
			buf := make([]byte, 64<<10)
			for quiet := 0; quiet < 3; {
				u.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
				n, err := u.Write(buf)
				switch {
				case errors.Is(err, os.ErrDeadlineExceeded) && n == 0:
					quiet++
				case err != nil && !errors.Is(err, os.ErrDeadlineExceeded):
					t.Fatalf("filling the tunnel: %v", err)
				default:
					quiet = 0
				}
			}
			u.SetWriteBuffer(1 << 20)
			x, y := lingeringPair(t)
			fds := []int{x, y}
			if order == "yx" {
				fds = []int{y, x}
			}
			u.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if _, _, err := u.WriteMsgUnix([]byte("z"), syscall.UnixRights(fds...), nil); err != nil {
				if errors.Is(err, syscall.EPERM) {
					// The proxy's end refuses descriptors (SO_PASSRIGHTS):
					// none is in flight. (y first: its reset ends x's wait.)
					syscall.Close(y)
					syscall.Close(x)
					stopWithin(t, stop, 30*time.Second)
					noCloseStuck(t, 20*time.Second)
					return
				}
				t.Fatalf("sending descriptors: %v", err)
			}
			// Only the message in flight holds x and y now.
			syscall.Close(x)
			syscall.Close(y)
			stopWithin(t, stop, 30*time.Second)
			noCloseStuck(t, 20*time.Second)
		})
	}
}
