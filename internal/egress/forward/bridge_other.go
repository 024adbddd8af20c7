//go:build !linux

package forward

import (
	"context"
	"net"
)

// bridge copies bytes between c and a new connection to the proxy's socket,
// both ways: descriptor passing is only used on Linux, where the sandbox
// that runs the forwarder lives.
func bridge(ctx context.Context, c net.Conn, socketPath string) {
	defer c.Close()
	up, err := dialProxy(ctx, socketPath)
	if err != nil {
		return
	}
	defer up.Close()
	copyBoth(ctx, c, up)
}
