//go:build !linux

package connlimit

import "net"

// peekQueued reports nothing queued: only Linux looks in the receive
// queue, so elsewhere a connection proves the token once the server reads
// it.
func peekQueued(net.Conn, []byte) int { return 0 }
