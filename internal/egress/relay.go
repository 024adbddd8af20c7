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
// The copy is a plain io.Copy on the connections themselves, so between a
// *net.TCPConn and a *net.UnixConn Linux moves the bytes with splice(2) and
// they never enter user space. Idleness is detected with read deadlines: a
// copy is started with a deadline half the idle timeout away; when it expires
// having moved bytes, or when the other direction moved bytes recently, the
// copy continues; otherwise the tunnel is idle. A tunnel is therefore closed
// between IdleTimeout and 1.5×IdleTimeout after its last byte (and a single
// write blocked on a peer that does not read counts as idle).
func (p *Proxy) pipe(dst, src net.Conn, act *activity) error {
	period := p.o.IdleTimeout / 2
	for {
		src.SetReadDeadline(time.Now().Add(period))
		n, err := io.Copy(dst, src)
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

// closeWrite passes EOF on: a half-close where the connection supports it,
// a full close where it does not.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}
