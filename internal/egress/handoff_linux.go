package egress

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/airlockhq/airlock/internal/egress/forward"
	"golang.org/x/sys/unix"
)

// maxHandoffFDs is how many descriptors one message may carry: the
// kernel's own limit (SCM_MAX_FD). Any count but one is refused, but every
// descriptor must be received to be closed here (releaseFD): those that did
// not fit the buffer the kernel would close itself, in this thread, where a
// sandbox's socket could make it wait.
const maxHandoffFDs = 253

// rightsSpace is the control buffer that holds maxHandoffFDs descriptors.
var rightsSpace = syscall.CmsgSpace(4 * maxHandoffFDs)

// firstBytes does the first read of a connection accepted on the Unix
// socket, of at most max bytes, and takes c over. When it is the one byte
// forward.Handoff carrying one descriptor of a connected TCP socket, it
// closes c and returns that connection (the forwarder has handed it over:
// a plain *net.TCPConn when the sender is a sandbox's init, which keeps no
// descriptor of it, else a handedConn; see peer_linux.go), no bytes and
// handed; when it carries no descriptor, it returns the connection to read
// the rest from (a unixClient, which refuses descriptors) and the bytes, the
// start of a byte-stream handshake. Anything else is an error, c is closed
// and every descriptor received is closed. c must already have its
// deadline, and deadline is the same time: the read waits for budget (see
// rightsBudget) no longer than that, nor past the end of ctx.
func firstBytes(ctx context.Context, c net.Conn, max int, budget rightsBudget, deadline time.Time) (client net.Conn, first []byte, handed bool, err error) {
	raw, ok := c.(*net.UnixConn)
	if !ok {
		return c, nil, false, nil
	}
	uc := newUnixClient(ctx, raw, budget)
	b := make([]byte, max)
	oob := make([]byte, rightsSpace)
	release, err := uc.readable(deadline)
	if err != nil {
		uc.Close()
		return uc, nil, false, err
	}
	n, oobn, flags, _, err := uc.ReadMsgUnix(b, oob)
	if n == 0 && err == nil {
		err = io.EOF
	}
	fds, perr := rights(oob[:oobn])
	if err != nil || (oobn == 0 && flags&syscall.MSG_CTRUNC == 0) {
		closeAll(fds)
		release()
		if err != nil {
			uc.Close()
			return uc, b[:n], false, err
		}
		if noMoreRights(raw) {
			// No descriptor is queued and none can come: the plain
			// connection, which relays splice, is safe to read and close.
			uc.g.drop()
			return raw, b[:n], false, nil
		}
		return uc, b[:n], false, nil
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
		release()
		uc.Close()
		return nil, nil, false, err
	}
	release() // one descriptor, the connection's own from now on
	sole := fromNestedInit(raw)
	// Messages queued after the handoff may carry descriptors too: the
	// guard's release closes the connection, and them.
	uc.Close()
	hc, err := adopt(fds[0], sole)
	if err != nil {
		return nil, nil, false, err
	}
	return hc, nil, true, nil
}

// readable waits until a message is queued on c, without taking it (or
// the descriptors it carries), by c's read deadline; then for the proxy's
// budget of descriptors received at once (rightsBudget), until deadline
// (none when zero) or the end of the sandbox. The returned release gives
// the budget back: call it once every descriptor the next read takes is
// closed or kept, and before anything that may wait on a close.
func (c *unixClient) readable(deadline time.Time) (release func(), err error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var one [1]byte
	if err := rc.Read(func(fd uintptr) bool {
		for {
			// A peek with no control buffer takes no descriptor: the
			// kernel drops the references it made for it, never the
			// last ones, which the queued message keeps.
			_, _, err := unix.Recvfrom(int(fd), one[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
			if err != unix.EINTR {
				return err != unix.EAGAIN
			}
		}
	}); err != nil {
		return nil, err
	}
	return c.budget.acquire(c.ctx, deadline)
}

// unixClient is a connection accepted on the proxy's Unix socket that
// carries a byte stream (the Podman backend's forwarder, an unsandboxed
// http_fetch, or a payload that dialled the socket). Its reads take any
// descriptors sent along (a plain read would leave the kernel to close
// them in this thread) and refuse them, and its Close releases a guard, so
// that descriptors still queued are closed by releaseFD. It has no
// ReadFrom or WriteTo, and relays copy it through a buffer: splice(2)
// would drop descriptors just as a read does.
type unixClient struct {
	*net.UnixConn
	g      *guard
	oob    []byte
	ctx    context.Context // the sandbox's: its end stops a wait for budget
	budget rightsBudget
}

// soPassRights is SO_PASSRIGHTS (Linux 6.16): cleared, the kernel refuses
// SCM_RIGHTS sent to the socket (EPERM to the sender).
const soPassRights = 83

// noMoreRights reports whether c can no longer receive descriptors and
// none is queued on it: it clears SO_PASSRIGHTS, waits out a sender that
// passed that check already (getpeername takes the socket's state lock,
// which a sender holds from the check until its message is queued), and
// then reads the count of queued descriptors (scm_fds in fdinfo). False on
// a kernel without SO_PASSRIGHTS.
func noMoreRights(c *net.UnixConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	rc.Control(func(u uintptr) {
		fd := int(u)
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, soPassRights, 0) != nil {
			return
		}
		if _, err := unix.Getpeername(fd); err != nil {
			return
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(fd))
		if err != nil {
			return
		}
		for line := range bytes.Lines(info) {
			if v, found := bytes.CutPrefix(line, []byte("scm_fds:")); found {
				ok = string(bytes.TrimSpace(v)) == "0"
			}
		}
	})
	return ok
}

func newUnixClient(ctx context.Context, c *net.UnixConn, budget rightsBudget) *unixClient {
	return &unixClient{UnixConn: c, g: newGuard(c), oob: make([]byte, rightsSpace), ctx: ctx, budget: budget}
}

// Read reads bytes; a message with descriptors is an error, and they are
// closed. It takes the proxy's budget for the read (see readable).
func (c *unixClient) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	release, err := c.readable(time.Time{})
	if err != nil {
		return 0, err
	}
	n, oobn, flags, _, err := c.ReadMsgUnix(b, c.oob)
	if oobn > 0 || flags&syscall.MSG_CTRUNC != 0 {
		fds, _ := rights(c.oob[:oobn])
		closeAll(fds)
		release()
		return 0, fmt.Errorf("%w: descriptors after the first message", errBadHandoff)
	}
	release()
	if (n == 0 && err == nil) || errors.Is(err, io.EOF) {
		// ReadMsgUnix reports the end of a stream as an *OpError;
		// io.Copy must see io.EOF itself to pass a half-close on.
		return n, io.EOF
	}
	return n, err
}

// Close closes the connection, then its last descriptor (with any
// descriptors still queued on it) by releaseFD.
func (c *unixClient) Close() error {
	err := c.UnixConn.Close()
	c.g.release()
	return err
}

func (c *unixClient) relayBuffered() {}

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

// adopt turns a received descriptor into the client connection, after
// checking it is what the forwarder sends: a connected TCP socket. sole
// says no other process holds the socket (a sandbox's init sent it), so
// its file's flags are the proxy's alone and a relay may splice it. It
// always closes fd, or keeps it as the connection's guard.
func adopt(fd int, sole bool) (net.Conn, error) {
	if err := checkHanded(fd); err != nil {
		releaseFD(fd)
		return nil, err
	}
	// net.FileConn takes a duplicate of its own; fd still holds the socket,
	// so closing dup, or the connection, is never the last close.
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		releaseFD(fd)
		return nil, fmt.Errorf("%w: %w", errBadHandoff, err)
	}
	f := os.NewFile(uintptr(dup), "handoff")
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		releaseFD(fd)
		return nil, fmt.Errorf("%w: %w", errBadHandoff, err)
	}
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		nc.Close()
		releaseFD(fd)
		return nil, fmt.Errorf("%w: not a TCP connection", errBadHandoff)
	}
	if sole {
		// No process but the proxy holds it: its options, SO_LINGER
		// among them, are the forwarder's accepted socket's.
		syscall.Close(fd)
		return tc, nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		tc.Close()
		releaseFD(fd)
		return nil, fmt.Errorf("%w: %w", errBadHandoff, err)
	}
	return &handedConn{tc: tc, rc: rc, g: &guard{fd: fd}}, nil
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
	g  *guard // the received descriptor, closed last (release_linux.go)
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

// Close shuts the socket down, waking any call blocked on it, then closes
// it, the last descriptor by releaseFD: the sandbox may have set SO_LINGER.
func (c *handedConn) Close() error {
	c.rc.Control(func(fd uintptr) { syscall.Shutdown(int(fd), syscall.SHUT_RDWR) })
	err := c.tc.Close()
	c.g.release()
	return err
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
