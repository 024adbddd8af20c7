//go:build !linux

package kube

import (
	"net"
	"strconv"
	"testing"
	"time"
)

// reservePort returns a free loopback port. Without SO_REUSEPORT's
// semantics to hold it, another process may take it before a hands binds
// it; listenPort retries a moment.
func reservePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// listenPort listens on the loopback port reservePort returned.
func listenPort(port int) (ln net.Listener, err error) {
	for range 100 {
		if ln, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			return ln, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, err
}
