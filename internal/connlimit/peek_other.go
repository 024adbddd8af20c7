//go:build !linux

package connlimit

import "net"

// queuedBytes reports nothing queued: only Linux looks in the receive
// queue, so elsewhere a connection proves the token once the server reads
// it, and counts as having sent something once it has been read from.
func queuedBytes(net.Conn) int { return 0 }

// peekQueued copies nothing (see queuedBytes).
func peekQueued(net.Conn, []byte) int { return 0 }
