package connlimit

import (
	"net"
	"syscall"
)

// peekQueued copies into buf what waits unread in c's receive queue,
// without taking it, and returns how many bytes it copied: 0 when nothing
// waits, the peer has closed, or c is not a socket. It never blocks, and
// it takes none of the locks a concurrent Read holds.
func peekQueued(c net.Conn, buf []byte) int {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	_ = rc.Control(func(fd uintptr) {
		m, _, err := syscall.Recvfrom(int(fd), buf, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		if err == nil && m > 0 {
			n = m
		}
	})
	return n
}
