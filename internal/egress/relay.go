package egress

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// activity records when bytes last moved through a tunnel, in either direction.
type activity struct{ last atomic.Int64 }

func (a *activity) touch()               { a.last.Store(time.Now().UnixNano()) }
func (a *activity) since() time.Duration { return time.Since(time.Unix(0, a.last.Load())) }
func newActivity() *activity             { a := &activity{}; a.touch(); return a }

var errIdle = errors.New("tunnel idle")

// relay copies c↔up until both directions end, passing half-close on, and
// closes both when either side fails or the tunnel goes idle.
func (p *Proxy) relay(c, up net.Conn) {
	p.boundBuffers(c, up)
	act := newActivity()
	var wg sync.WaitGroup
	var once sync.Once
	closeBoth := func() { once.Do(func() { c.Close(); up.Close() }) }
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := p.pipe(up, c, act); err != nil {
			closeBoth()
		}
	}()
	go func() {
		defer wg.Done()
		if err := p.pipe(c, up, act); err != nil {
			closeBoth()
		}
	}()
	wg.Wait()
	closeBoth()
}

// pipe copies src to dst until src's EOF, then half-closes dst.
//
// Between *net.TCPConn and *net.UnixConn connections (a byte-stream
// client, or a connection a sandbox's init handed over, which the proxy
// alone holds: peer_linux.go) the copy is a plain io.Copy on the
// connections themselves, so Linux moves the bytes with splice(2) and they
// never enter user space: on loopback that took the path from 54-66% to
// 66-79% of a direct copy's throughput (BenchmarkThroughputRatio). A
// connection another process may also hold is copied through a pooled
// buffer instead (see handedConn). Idleness is detected with read
// deadlines: a
// copy is started with a deadline half the idle timeout away; when it expires
// having moved bytes, or when the other direction moved bytes recently, the
// copy continues; otherwise the tunnel is idle. A tunnel is therefore closed
// between IdleTimeout and 1.5×IdleTimeout after its last byte (and a single
// write blocked on a peer that does not read counts as idle).
func (p *Proxy) pipe(dst, src net.Conn, act *activity) error {
	period := p.o.IdleTimeout / 2
	copyOnce := io.Copy
	if needsBuffer(dst) || needsBuffer(src) {
		buf := relayBufs.Get().(*[]byte)
		defer relayBufs.Put(buf)
		copyOnce = func(dst io.Writer, src io.Reader) (int64, error) {
			return io.CopyBuffer(writerOnly{dst}, readerOnly{src}, *buf)
		}
	}
	for {
		src.SetReadDeadline(time.Now().Add(period))
		n, err := copyOnce(dst, src)
		if n > 0 {
			act.touch()
		}
		switch {
		case err == nil:
			closeWrite(dst)
			return nil
		case errors.Is(err, os.ErrDeadlineExceeded):
			if n > 0 || act.since() < p.o.IdleTimeout {
				continue
			}
			return errIdle
		default:
			return err
		}
	}
}

// sizedConn is a connection whose kernel buffers can be set.
type sizedConn interface {
	SetReadBuffer(bytes int) error
	SetWriteBuffer(bytes int) error
}

// boundBuffers applies Options.SocketBuffer to both ends of a relay.
func (p *Proxy) boundBuffers(conns ...net.Conn) {
	each := p.o.SocketBuffer / 4
	if each <= 0 {
		return
	}
	for _, c := range conns {
		if sc, ok := c.(sizedConn); ok {
			sc.SetReadBuffer(each)
			sc.SetWriteBuffer(each)
		}
	}
}

// closeWrite passes EOF on: a half-close where the connection supports it,
// a full close where it does not.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

// relayBufSize is the buffer a relay that cannot splice copies through, one
// per direction while a tunnel lasts (at most 32 MiB for the 64 connections
// a proxy allows by default). Sizes from 64 KiB to 4 MiB measured the same
// within noise on loopback; this one keeps the number of reads and writes
// low without holding much memory.
const relayBufSize = 256 << 10

var relayBufs = sync.Pool{New: func() any { b := make([]byte, relayBufSize); return &b }}

// buffered is implemented by connections a relay must copy through a buffer
// (handedConn: splice would use the descriptor's own blocking mode).
type buffered interface{ relayBuffered() }

func needsBuffer(c net.Conn) bool { _, ok := c.(buffered); return ok }

// writerOnly and readerOnly hide ReadFrom and WriteTo, so io.CopyBuffer
// uses the buffer it is given.
type writerOnly struct{ io.Writer }
type readerOnly struct{ io.Reader }
