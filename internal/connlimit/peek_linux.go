package connlimit

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// control runs f on c's socket descriptor, without the locks a concurrent
// Read holds; it reports false when c is not a socket.
func control(c net.Conn, f func(fd int)) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	return rc.Control(func(fd uintptr) { f(int(fd)) }) == nil
}

// queuedBytes is how many bytes wait unread in c's receive queue: 0 when
// none do, the peer has closed, or c is not a socket.
func queuedBytes(c net.Conn) int {
	n := 0
	control(c, func(fd int) {
		if v, err := unix.IoctlGetInt(fd, unix.SIOCINQ); err == nil && v > 0 {
			n = v
		}
	})
	return n
}

// peekQueued copies into buf what waits unread in c's receive queue,
// without taking it, and returns how many bytes it copied. It never
// blocks.
func peekQueued(c net.Conn, buf []byte) int {
	n := 0
	if len(buf) == 0 {
		return 0
	}
	control(c, func(fd int) {
		if m, _, err := syscall.Recvfrom(fd, buf, syscall.MSG_PEEK|syscall.MSG_DONTWAIT); err == nil && m > 0 {
			n = m
		}
	})
	return n
}
