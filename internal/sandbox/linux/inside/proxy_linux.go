package inside

import (
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

// forwardProxy listens on 127.0.0.1:port inside the sandbox's network
// namespace and bridges each connection to the egress proxy's socket, so
// clients configured with HTTPS_PROXY/ALL_PROXY reach it. The listener
// lives in the init and dies with it.
func forwardProxy(port int) error {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("listening for the proxy forwarder: %w", err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go bridge(c)
		}
	}()
	return nil
}

func bridge(c net.Conn) {
	defer c.Close()
	u, err := net.Dial("unix", initproto.ProxyMount)
	if err != nil {
		return
	}
	defer u.Close()
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(u, c)
		if cw, ok := u.(*net.UnixConn); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(c, u)
		if cw, ok := c.(*net.TCPConn); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}()
	<-done
	<-done
}
