// Package forward is the in-sandbox half of egress: it listens on a loopback
// TCP port (the address HTTPS_PROXY and ALL_PROXY name) and bridges each
// connection to the broker's egress proxy through its Unix socket. It makes
// no decisions and imports only the standard library, so the sandbox side
// stays small.
package forward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Forward accepts connections on l until ctx is done, and for each one dials
// the Unix socket at socketPath and copies bytes both ways, passing a
// half-close on in each direction. Between a *net.TCPConn and a *net.UnixConn
// the copy uses splice(2) on Linux. Cancelling ctx closes l and every open
// connection; Forward returns when they have all ended, with nil if ctx was
// cancelled and the accept error otherwise.
func Forward(ctx context.Context, l net.Listener, socketPath string) error {
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return fmt.Errorf("accepting on %s: %w", l.Addr(), err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			bridge(ctx, c, socketPath)
		}()
	}
}

func bridge(ctx context.Context, c net.Conn, socketPath string) {
	defer c.Close()
	var d net.Dialer
	up, err := d.DialContext(ctx, "unix", socketPath)
	if err != nil {
		return
	}
	defer up.Close()
	stop := context.AfterFunc(ctx, func() { c.Close(); up.Close() })
	defer stop()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); pipe(up, c) }()
	go func() { defer wg.Done(); pipe(c, up) }()
	wg.Wait()
}

// pipe copies src to dst, then passes EOF on; on an error it closes both so
// the other direction ends too.
func pipe(dst, src net.Conn) {
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		src.Close()
		return
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	} else {
		dst.Close()
	}
}
