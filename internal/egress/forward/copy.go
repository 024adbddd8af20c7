package forward

import (
	"context"
	"io"
	"net"
	"sync"
)

// copyBoth copies bytes between c and up, the connection to the proxy's
// socket, both ways until both directions end, passing a half-close on in
// each; cancelling ctx closes both.
func copyBoth(ctx context.Context, c, up net.Conn) {
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
