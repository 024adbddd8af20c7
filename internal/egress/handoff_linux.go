package egress

import (
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/airlockhq/airlock/internal/egress/forward"
)

// maxHandoffFDs is how many descriptors one first message may carry before
// the kernel truncates it; any count but one is refused, so room for a few
// more only lets the refusal see that there were several.
const maxHandoffFDs = 4

// firstBytes does the first read of a connection accepted on the Unix
// socket, of at most max bytes. When it is the one byte forward.Handoff
// carrying one descriptor of a connected TCP socket, it returns that
// connection (the forwarder has handed it over: a plain *net.TCPConn when
// the sender is a sandbox's init, which keeps no descriptor of it, else a
// handedConn; see peer_linux.go) and no bytes; when it
// carries no descriptor, it returns c and the bytes, the start of a
// byte-stream handshake. Anything else is an error and every descriptor
// received is closed. c must already have its deadline.
func firstBytes(c net.Conn, max int) (net.Conn, []byte, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return c, nil, nil
	}
	b := make([]byte, max)
	oob := make([]byte, syscall.CmsgSpace(4*maxHandoffFDs))
	n, oobn, flags, _, err := uc.ReadMsgUnix(b, oob)
	if n == 0 && err == nil {
		err = io.EOF
	}
	fds, perr := rights(oob[:oobn])
	if err != nil || (oobn == 0 && flags&syscall.MSG_CTRUNC == 0) {
		closeAll(fds)
		return c, b[:n], err
	}
	switch {
	case perr != nil:
		err = perr
	case flags&syscall.MSG_CTRUNC != 0 || len(fds) != 1:
		err = fmt.Errorf("%w: %d descriptors (or more), want 1", errBadHandoff, len(fds))
	case n != 1 || b[0] != forward.Handoff:
		err = fmt.Errorf("%w: descriptor with byte %#x", errBadHandoff, b[0])
	}
	if err != nil {
		closeAll(fds)
		return nil, nil, err
	}
	hc, err := adopt(fds[0], fromNestedInit(uc))
	if err != nil {
		return nil, nil, err
	}
	return hc, nil, nil
}

// rights returns every descriptor in the control messages of oob.
func rights(oob []byte) ([]int, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadHandoff, err)
	}
	var fds []int
	var bad error
	for _, m := range msgs {
		if m.Header.Level != syscall.SOL_SOCKET || m.Header.Type != syscall.SCM_RIGHTS {
			bad = fmt.Errorf("%w: control message %d/%d", errBadHandoff, m.Header.Level, m.Header.Type)
			continue
		}
		got, err := syscall.ParseUnixRights(&m)
		if err != nil {
			bad = fmt.Errorf("%w: %w", errBadHandoff, err)
		}
		fds = append(fds, got...)
	}
	return fds, bad
}

func closeAll(fds []int) {
	for _, fd := range fds {
		syscall.Close(fd)
	}
}

// adopt turns a received descriptor into the client connection, after
// checking it is what the forwarder sends: a connected TCP socket. sole
// says no other process holds the socket (a sandbox's init sent it), so
// its file's flags are the proxy's alone and a relay may splice it. It
// always closes fd (the connection holds its own duplicate).
func adopt(fd int, sole bool) (net.Conn, error) {
	if err := checkHanded(fd); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "handoff")
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadHandoff, err)
	}
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		nc.Close()
		return nil, fmt.Errorf("%w: not a TCP connection", errBadHandoff)
	}
	if sole {
		return tc, nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		tc.Close()
		return nil, fmt.Errorf("%w: %w", errBadHandoff, err)
	}
	return &handedConn{tc: tc, rc: rc}, nil
}

// checkHanded reports why fd is not a connected TCP socket, if it is not.
func checkHanded(fd int) error {
	check := func(opt, want int, what string) error {
		v, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, opt)
		if err != nil {
			return fmt.Errorf("%w: not a socket: %w", errBadHandoff, err)
		}
		if v != want {
			return fmt.Errorf("%w: %s is %d, want %d", errBadHandoff, what, v, want)
		}
		return nil
	}
	if err := check(syscall.SO_TYPE, syscall.SOCK_STREAM, "socket type"); err != nil {
		return err
	}
	if err := check(syscall.SO_PROTOCOL, syscall.IPPROTO_TCP, "protocol"); err != nil {
		return err
	}
	if d, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_DOMAIN); err != nil || (d != syscall.AF_INET && d != syscall.AF_INET6) {
		return fmt.Errorf("%w: socket domain %d, want AF_INET or AF_INET6", errBadHandoff, d)
	}
	if _, err := syscall.Getpeername(fd); err != nil {
		return fmt.Errorf("%w: socket not connected: %w", errBadHandoff, err)
	}
	return nil
}

// handedConn is a client connection the forwarder handed over. The sandbox
// may hold another descriptor of the same open socket (a payload that
// dialled the proxy's socket itself and sent one of its own), and with it
// clear O_NONBLOCK, which would make plain read(2) and write(2) block a
// broker thread past every deadline. So bytes move with recvmsg and sendmsg
// under MSG_DONTWAIT, which never block whatever the descriptor's flags, and
// the poller waits in between, honouring deadlines; Close shuts the socket
// down first, which wakes anything still waiting on it. It has no ReadFrom or
// WriteTo: relays copy through a buffer (see pipe).
type handedConn struct {
	tc *net.TCPConn
	rc syscall.RawConn
}

func (c *handedConn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	var err error
	if rerr := c.rc.Read(func(fd uintptr) bool {
		for {
			n, _, _, _, err = syscall.Recvmsg(int(fd), b, nil, syscall.MSG_DONTWAIT)
			if err != syscall.EINTR {
				return err != syscall.EAGAIN
			}
		}
	}); rerr != nil {
		return 0, rerr
	}
	if err != nil {
		return 0, c.opError("read", err)
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (c *handedConn) Write(b []byte) (int, error) {
	off := 0
	var err error
	if werr := c.rc.Write(func(fd uintptr) bool {
		for off < len(b) {
			var n int
			n, err = syscall.SendmsgN(int(fd), b[off:], nil, nil, syscall.MSG_DONTWAIT|syscall.MSG_NOSIGNAL)
			switch {
			case err == syscall.EINTR:
				continue
			case err == syscall.EAGAIN:
				return false
			case err != nil:
				return true
			}
			off += n
		}
		return true
	}); werr != nil {
		return off, werr
	}
	if err != nil && err != syscall.EAGAIN {
		return off, c.opError("write", err)
	}
	return off, nil
}

func (c *handedConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.tc.LocalAddr(), Addr: c.tc.RemoteAddr(), Err: os.NewSyscallError(op, err)}
}

// Close shuts the socket down, waking any call blocked on it, then closes it.
func (c *handedConn) Close() error {
	c.rc.Control(func(fd uintptr) { syscall.Shutdown(int(fd), syscall.SHUT_RDWR) })
	return c.tc.Close()
}

func (c *handedConn) relayBuffered() {}

// CloseWrite half-closes the connection, passing EOF on to the client.
func (c *handedConn) CloseWrite() error          { return c.tc.CloseWrite() }
func (c *handedConn) SetReadBuffer(n int) error  { return c.tc.SetReadBuffer(n) }
func (c *handedConn) SetWriteBuffer(n int) error { return c.tc.SetWriteBuffer(n) }

func (c *handedConn) LocalAddr() net.Addr                { return c.tc.LocalAddr() }
func (c *handedConn) RemoteAddr() net.Addr               { return c.tc.RemoteAddr() }
func (c *handedConn) SetDeadline(t time.Time) error      { return c.tc.SetDeadline(t) }
func (c *handedConn) SetReadDeadline(t time.Time) error  { return c.tc.SetReadDeadline(t) }
func (c *handedConn) SetWriteDeadline(t time.Time) error { return c.tc.SetWriteDeadline(t) }
