//go:build !linux

package egress

import "net"

// discard closes a connection the proxy will not serve.
func discard(c net.Conn) { c.Close() }
