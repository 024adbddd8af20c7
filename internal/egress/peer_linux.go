package egress

import (
	"bytes"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Which handoffs the proxy may splice. A connection handed over is a
// socket whose open file another process may still hold, and with it
// clear O_NONBLOCK: splice(2) then blocks whatever its own flags say
// (tcp_splice_read and splice_to_socket look only at the file's flags), so
// such a connection moves through a buffer under MSG_DONTWAIT (handedConn).
// The native sandbox's forwarder is not such a process: it runs in the
// sandbox's init, PID 1 of the sandbox's PID namespace, which accepted the
// connection, sends its descriptor and closes its own, and nothing else in
// the sandbox can reach the init's descriptors (it is not dumpable, and
// seccomp refuses ptrace, pidfd_getfd and process_vm_*). Nothing in a
// sandbox but its init is PID 1 of a namespace either: seccomp refuses a
// nested PID namespace. So a handoff whose sender is PID 1 of a PID
// namespace below the proxy's gives the proxy the only descriptor of that
// socket, and the relay splices it like any socket of its own.
//
// Were the check wrong (a process that is PID 1 of some namespace sending a
// socket it keeps), the cost is bounded: a relay's splice could block a
// broker thread until the sandbox ends, when the proxy closes the socket.

// fromNestedInit reports whether the process at the other end of c is
// PID 1 of a PID namespace nested below the one /proc shows, by the pidfd
// of the peer (SO_PEERPIDFD, Linux 6.5), which no reuse of its pid can
// fool. A kernel without it gives only the peer's pid, which another
// process could have by the time the first message is read: such a
// handoff is not trusted, and moves through a buffer.
func fromNestedInit(c *net.UnixConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	pidfd := -1
	if rc.Control(func(fd uintptr) {
		if v, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PEERPIDFD); err == nil {
			pidfd = v
		}
	}) != nil || pidfd < 0 {
		return false
	}
	status, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(pidfd))
	unix.Close(pidfd)
	return err == nil && nestedInit(status)
}

// nestedInit reports whether the NSpid line of a /proc status or pidfd
// fdinfo text names a process's pid in more than one PID namespace, the
// innermost being 1.
func nestedInit(status []byte) bool {
	for line := range bytes.Lines(status) {
		rest, ok := bytes.CutPrefix(line, []byte("NSpid:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		return len(f) >= 2 && string(f[len(f)-1]) == "1"
	}
	return false
}
