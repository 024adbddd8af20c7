// Package connlimit caps the connections a server holds open at once, and
// keeps clients that never authenticate from using that cap up: a
// connection counts as unauthenticated from its accept until a request on
// it proves the token (Authenticated), and when the cap is reached a new
// connection takes the place of the oldest unauthenticated one. Only when
// every open connection has authenticated is a new one refused. So a
// client without the token, however many connections it opens and holds,
// cannot keep one that has the token from connecting: it would have to
// open a cap's worth of connections within the time the other takes to
// send its first request.
//
// A server using it sets http.Server.ConnContext to ConnContext, calls
// Authenticated from its handler once a request has shown the token, and
// answers a request without it with "Connection: close", so a refused
// client holds nothing once it has its answer.
package connlimit

import (
	"container/list"
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Listener caps the connections open at once (see the package comment).
// It is safe for concurrent use; its counters are for metrics.
type Listener struct {
	net.Listener
	max  int
	busy []byte // what a refused connection reads; nil: nothing

	mu   sync.Mutex
	open int
	// unauth holds the open connections that have not authenticated,
	// oldest first.
	unauth  *list.List
	refused atomic.Uint64
	evicted atomic.Uint64
}

// New returns inner capped at max connections (max > 0). busy, when not
// empty, is the text of a 503 response a refused connection reads before
// it is closed; give it only for a plain-HTTP listener (on a TLS one
// nothing readable can be sent before the handshake).
func New(inner net.Listener, max int, busy string) *Listener {
	l := &Listener{Listener: inner, max: max, unauth: list.New()}
	if busy != "" {
		l.busy = fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(busy), busy)
	}
	return l
}

// Accept returns the next connection. At the cap it closes the oldest
// unauthenticated connection to make room, or, when every open connection
// has authenticated, refuses the new one and waits for the next.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c := &conn{Conn: nc, l: l}
		var evict *conn
		l.mu.Lock()
		if l.open >= l.max {
			if e := l.unauth.Front(); e != nil {
				evict = e.Value.(*conn)
				l.forget(evict)
			}
		}
		admitted := l.open < l.max
		if admitted {
			l.open++
			c.elem = l.unauth.PushBack(c)
		}
		l.mu.Unlock()
		if evict != nil {
			l.evicted.Add(1)
			evict.Conn.Close()
		}
		if admitted {
			return c, nil
		}
		l.refused.Add(1)
		if l.busy != nil {
			// A fresh socket's send buffer is empty: this does not block.
			_ = nc.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			_, _ = nc.Write(l.busy)
		}
		nc.Close()
	}
}

// forget gives c's slot back; l.mu is held.
func (l *Listener) forget(c *conn) {
	if c.released {
		return
	}
	c.released = true
	l.open--
	if c.elem != nil {
		l.unauth.Remove(c.elem)
		c.elem = nil
	}
}

// Max returns the cap.
func (l *Listener) Max() int { return l.max }

// Open returns the number of connections open now.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Unauthenticated returns the number of open connections that have not
// authenticated.
func (l *Listener) Unauthenticated() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.unauth.Len()
}

// Refused returns the number of connections refused so far because every
// open connection had authenticated.
func (l *Listener) Refused() uint64 { return l.refused.Load() }

// Evicted returns the number of unauthenticated connections closed so far
// to make room for a new one.
func (l *Listener) Evicted() uint64 { return l.evicted.Load() }

// conn is one accepted connection; its fields are guarded by l.mu.
type conn struct {
	net.Conn
	l        *Listener
	elem     *list.Element // in l.unauth while unauthenticated
	released bool          // its slot is given back
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.l.mu.Lock()
	c.l.forget(c)
	c.l.mu.Unlock()
	return err
}

// CloseWrite half-closes a TCP connection, which net/http uses to end a
// response cleanly before closing; other connections are closed outright.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}

type connKey struct{}

// ConnContext is an http.Server's ConnContext: it puts the connection of a
// Listener (under TLS too) in the context of each of its requests, for
// Authenticated.
func ConnContext(ctx context.Context, nc net.Conn) context.Context {
	for {
		switch c := nc.(type) {
		case *conn:
			return context.WithValue(ctx, connKey{}, c)
		case interface{ NetConn() net.Conn }: // *tls.Conn
			nc = c.NetConn()
		default:
			return ctx
		}
	}
}

// Authenticated marks the connection that carried the request of ctx as
// authenticated: it is no longer closed to make room for a new one. It
// does nothing for a connection not accepted by a Listener.
func Authenticated(ctx context.Context) {
	c, ok := ctx.Value(connKey{}).(*conn)
	if !ok {
		return
	}
	c.l.mu.Lock()
	if c.elem != nil {
		c.l.unauth.Remove(c.elem)
		c.elem = nil
	}
	c.l.mu.Unlock()
}
