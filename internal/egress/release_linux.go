package egress

import (
	"net"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A sandbox decides how the last close of a socket it sent the proxy
// behaves. A TCP socket with SO_LINGER set, whose FIN waits behind bytes
// its peer never reads, makes close(2) wait until the peer reads, resets or
// the linger time (up to forever) passes; and the proxy's thread drops
// that last reference not only when it closes a descriptor it received, but
// also when it reads past, or closes a Unix connection still holding, a
// message that carries descriptors (the kernel closes them in the reader's
// thread). When the peer is itself a descriptor the proxy holds and would
// close next, the wait never ends: a broker thread, the proxy's slot and
// Serve (and so the call that waits for it) are held for good.
//
// So every descriptor a sandbox can have reached is closed by releaseFD,
// which interrupts such a wait: the wait (sk_stream_wait_close) ends on a
// pending signal, and the socket is then orphaned and ended by the kernel
// like any other. A connection the proxy keeps (the Unix connection a
// sandbox dialled, a socket it handed over) holds a duplicate of its
// descriptor (a guard) that is released last, so the Go runtime's own
// close of the connection is never the last one.

// releaseNudge is how long a close may wait before its thread is
// interrupted, and again between interruptions.
const releaseNudge = 20 * time.Millisecond

// releaseFD closes fd without letting the close wait on the descriptor's
// socket (or on descriptors in flight in it): while close(2) has not
// returned, the thread making it gets SIGURG (which the Go runtime takes as
// a harmless preemption request) every releaseNudge.
func releaseFD(fd int) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pid, tid := unix.Getpid(), unix.Gettid()
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(releaseNudge)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				unix.Tgkill(pid, tid, unix.SIGURG)
			}
		}
	}()
	unix.Close(fd)
	close(stop)
	<-stopped // no signal is sent to tid once the thread is unlocked
}

func closeAll(fds []int) {
	for _, fd := range fds {
		releaseFD(fd)
	}
}

// guard is a duplicate of a connection's descriptor, released (releaseFD)
// after the connection is closed, so that its close is the last.
type guard struct {
	fd   int
	once sync.Once
}

// newGuard duplicates c's descriptor; a nil guard (the duplicate failed)
// releases nothing.
func newGuard(c syscall.Conn) *guard {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil
	}
	fd := -1
	rc.Control(func(u uintptr) { fd, _ = unix.FcntlInt(u, unix.F_DUPFD_CLOEXEC, 0) })
	if fd < 0 {
		return nil
	}
	return &guard{fd: fd}
}

// drop closes the guard at once, for a connection whose own close cannot
// wait: the guard is a duplicate, so this close is never the last.
func (g *guard) drop() {
	if g != nil {
		g.once.Do(func() { unix.Close(g.fd) })
	}
}

func (g *guard) release() {
	if g != nil {
		g.once.Do(func() { releaseFD(g.fd) })
	}
}

// discard closes a connection accepted on the proxy's socket that the proxy
// will not serve: messages queued on it may carry descriptors.
func discard(c net.Conn) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		c.Close()
		return
	}
	g := newGuard(sc)
	c.Close()
	g.release()
}
