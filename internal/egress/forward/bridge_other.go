//go:build !linux

package forward

import (
	"context"
	"io"
	"net"
	"sync"
)

// bridge copies bytes between c and a new connection to the proxy's socket,
// both ways: descriptor passing is only used on Linux, where the sandbox
// that runs the forwarder lives.
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
