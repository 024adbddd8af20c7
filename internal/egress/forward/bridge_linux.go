package forward

import (
	"context"
	"net"
	"syscall"
)

// bridge hands c to the proxy: it dials the proxy's socket, sends one
// Handoff byte carrying c's descriptor, and closes its own copies. From then
// on the proxy alone reads and writes the connection, and the sandbox
// client's bytes cross no socket of the forwarder's. When the kernel
// refuses the descriptor (ETOOMANYREFS: descriptors in flight are counted
// per host user, so another sandbox of the broker's user holding many
// makes every send of one fail), bridge copies the connection's bytes to
// the proxy's socket instead, as the forwarder does where descriptors
// cannot be passed, so that no other sandbox can cut this one off its
// network. A connection that cannot be handed over (no proxy, a listener
// whose connections have no descriptor) is closed: the client sees EOF.
func bridge(ctx context.Context, c net.Conn, socketPath string) {
	defer c.Close()
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	up, err := dialProxy(ctx, socketPath)
	if err != nil {
		return
	}
	defer up.Close()
	uc, ok := up.(*net.UnixConn)
	if !ok {
		return
	}
	// The kernel takes its own reference to the socket with the message, so
	// closing both copies afterwards leaves the proxy's the only one.
	var n int
	var sendErr error
	rc.Control(func(fd uintptr) {
		n, _, sendErr = uc.WriteMsgUnix([]byte{Handoff}, syscall.UnixRights(int(fd)), nil)
	})
	if sendErr != nil && n == 0 {
		copyBoth(ctx, c, up)
	}
}
