// Package forward is the in-sandbox half of egress: it listens on a loopback
// TCP port (the address HTTPS_PROXY and ALL_PROXY name) and hands each
// connection to the broker's egress proxy through its Unix socket. The Linux
// sandbox's init runs it (internal/sandbox/linux/inside); there is no other
// copy. It makes no decisions and imports only the standard library, so the
// sandbox side stays small.
//
// A connection is handed over, not copied: the forwarder sends its
// descriptor to the proxy (SCM_RIGHTS, one [Handoff] byte carrying it) and
// closes its own copies, so the bytes of a tunnel cross one relay, the
// proxy's, instead of two sockets more. On a platform without descriptor
// passing the forwarder copies bytes both ways instead (see bridge).
package forward

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"
)

// Forward accepts connections on l until ctx is done, and for each one dials
// the Unix socket at socketPath and hands the connection over (see the
// package doc; on a platform without descriptor passing it copies bytes both
// ways instead, passing a half-close on in each direction). An accept error
// that [TemporaryAcceptError] calls temporary — the sandbox opened more
// connections than the forwarder has descriptors for, say — makes Forward
// pause (5 ms, doubling to 1 s, as net/http's server does) and accept again:
// a burst costs the connections it could not take, never the sandbox's way
// out. Cancelling ctx closes l and every connection not yet handed over;
// Forward returns when they have all ended, with nil if ctx was cancelled
// and the accept error otherwise.
func Forward(ctx context.Context, l net.Listener, socketPath string) error {
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	var backoff time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if TemporaryAcceptError(err) {
				backoff = NextBackoff(backoff)
				select {
				case <-time.After(backoff):
				case <-ctx.Done():
				}
				continue
			}
			return fmt.Errorf("accepting on %s: %w", l.Addr(), err)
		}
		backoff = 0
		wg.Add(1)
		go func() {
			defer wg.Done()
			bridge(ctx, c, socketPath)
		}()
	}
}

// TemporaryAcceptError reports whether err, returned by Accept, is worth
// retrying after a pause rather than ending an accept loop: a timeout, or a
// shortage that passes once connections close (EMFILE, ENFILE, ENOBUFS,
// ENOMEM), or a connection aborted before it was accepted (ECONNABORTED,
// EINTR). The egress proxy's accept loop uses it too.
func TemporaryAcceptError(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.EINTR} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// NextBackoff is the pause after one more temporary accept error, given the
// last pause (0 after a success): 5 ms, doubling, at most 1 s.
func NextBackoff(last time.Duration) time.Duration {
	return min(max(2*last, 5*time.Millisecond), time.Second)
}

// dialProxy connects to the proxy's Unix socket at socketPath. A connect
// the kernel turns away for now (EAGAIN: the socket's accept queue is full,
// the proxy busy with a burst or slow on a loaded machine) is tried again
// after a pause (5 ms, doubling to 1 s) until it succeeds or ctx ends: Go
// does not retry it, and giving up would close the client's connection
// with its request unread, which the client sees as a reset, though the
// proxy was only slow.
func dialProxy(ctx context.Context, socketPath string) (net.Conn, error) {
	var d net.Dialer
	var backoff time.Duration
	for {
		up, err := d.DialContext(ctx, "unix", socketPath)
		if err == nil || !errors.Is(err, syscall.EAGAIN) {
			return up, err
		}
		backoff = NextBackoff(backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return nil, err
		}
	}
}

// Handoff is the one byte the forwarder sends on the proxy's Unix socket
// with a connection's descriptor attached (SCM_RIGHTS). No SOCKS or HTTP
// request starts with it.
const Handoff byte = 0
