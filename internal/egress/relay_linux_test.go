package egress

import (
	"net"
	"syscall"
	"testing"
)

// TestBoundBuffers: SocketBuffer sets both buffers of both ends of a relay
// to a quarter of it each, which the kernel doubles.
func TestBoundBuffers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	New(&Options{SocketBuffer: 1 << 20}).boundBuffers(a, b)
	for _, c := range []net.Conn{a, b} {
		rc, _ := c.(*net.TCPConn).SyscallConn()
		rc.Control(func(fd uintptr) {
			for _, opt := range []int{syscall.SO_RCVBUF, syscall.SO_SNDBUF} {
				if v, err := syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, opt); err != nil || v != 512<<10 {
					t.Errorf("option %d = %d, %v; want %d", opt, v, err, 512<<10)
				}
			}
		})
	}
}
