package inside

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/airlockhq/airlock/internal/egress/forward"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

// forwardProxy listens on 127.0.0.1:port inside the sandbox's network
// namespace and runs the egress forwarder (package forward, the one its
// tests exercise) on it, bridging each connection to the egress proxy's
// socket at initproto.ProxyMount, so clients configured with
// HTTPS_PROXY/ALL_PROXY reach it. The listener lives in the init and dies
// with it; the forwarder ends only with the init or a permanent accept
// error (a shortage of descriptors is not one).
func forwardProxy(port int) error {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("listening for the proxy forwarder: %w", err)
	}
	go forward.Forward(context.Background(), ln, initproto.ProxyMount)
	return nil
}
