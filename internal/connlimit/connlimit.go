// Package connlimit caps the connections a server holds open at once, and
// keeps clients that never authenticate from using that cap up: a
// connection counts as unauthenticated from its accept until it proves the
// token, and when the cap is reached a new connection takes the place of
// an unauthenticated one. Only when every open connection has
// authenticated is a new one refused.
//
// A connection proves the token in either of two ways: a request on it
// shows the token to the server's handler (Authenticated), or, when the
// Listener knows the token (Options.Token), the token is among the first
// bytes it sent, whether the server has read them yet or they still wait
// in the kernel's receive queue. The second way matters under a flood: a
// client that opens connections faster than the server's handlers run
// would otherwise evict an authorised connection between its accept and
// its handler, although its request, token and all, had already arrived.
//
// The connection made to give way is the oldest that has sent nothing, or
// failing that, the oldest that has sent something without the token. So
// silent connections, however many and however fast, cannot push out a
// connection whose token has arrived; over TLS, where the listener sees
// only ciphertext, they cannot push out one that has begun its handshake.
//
// A server using it sets http.Server.ConnContext to ConnContext, calls
// Authenticated from its handler once a request has shown the token, and
// answers a request without it with "Connection: close", so a refused
// client holds nothing once it has its answer.
package connlimit

import (
	"bytes"
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
	max   int
	busy  []byte // what a refused connection reads; nil: nothing
	token []byte // proves a connection that sends it; nil: only Authenticated does
	// writeTimeout bounds each writeChunk of a write; zero: no bound.
	writeTimeout time.Duration
	peek         []byte // Accept's buffer for what waits in a connection's receive queue; guarded by mu

	mu   sync.Mutex
	open int
	// unauth holds the open connections that have not authenticated,
	// oldest first.
	unauth  *list.List
	refused atomic.Uint64
	evicted atomic.Uint64
}

// Options configure a Listener. The zero value is valid.
type Options struct {
	// Busy, when not empty, is the text of a 503 response a refused
	// connection reads before it is closed; give it only for a plain-HTTP
	// listener (on a TLS one nothing readable can be sent before the
	// handshake).
	Busy string
	// Token, when at least MinToken bytes long, is the secret a request
	// carries: a connection that has sent it is taken as authenticated
	// before its handler runs (see the package comment). Give it only for
	// a plain-HTTP listener; over TLS it is never seen.
	Token string
	// WriteTimeout, when positive, bounds how long the peer may take to
	// accept each 64 KiB the server writes to a connection: a
	// write that makes no more progress than that fails with a timeout,
	// and the server closes the connection. Without it a client that
	// stops reading an answer holds the goroutine writing it, and all
	// that waits for that write, for as long as it keeps the connection
	// open. It sets the connection's write deadline before each chunk, so
	// a deadline set on the connection by its server is overridden.
	WriteTimeout time.Duration
}

// writeChunk is the most written under one deadline of
// Options.WriteTimeout: a peer must take this much per WriteTimeout, so the
// bound is on progress, not on the time a large answer takes in all.
const writeChunk = 64 << 10

// MinToken is the shortest Options.Token the Listener looks for: a
// shorter one could turn up in bytes sent without knowing it.
const MinToken = 16

// scanBytes is how much of what a connection sends first its reads are
// searched for the token: room for a request line and its headers.
const scanBytes = 16 << 10

// peekBytes is how much of what waits in a connection's receive queue
// victim searches for the token: a client's request line and
// Authorization header come in its first bytes.
const peekBytes = 4 << 10

// New returns inner capped at max connections (max > 0). o may be nil.
func New(inner net.Listener, max int, o *Options) *Listener {
	l := &Listener{Listener: inner, max: max, unauth: list.New()}
	if o == nil {
		return l
	}
	l.writeTimeout = o.WriteTimeout
	if o.Busy != "" {
		l.busy = fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(o.Busy), o.Busy)
	}
	if len(o.Token) >= MinToken {
		l.token = []byte(o.Token)
		l.peek = make([]byte, peekBytes)
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
		c := &conn{Conn: nc, l: l, scanning: l.token != nil}
		var evict *conn
		l.mu.Lock()
		if l.open >= l.max {
			if evict = l.victim(); evict != nil {
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

// victimScan is how many unauthenticated connections, oldest first, victim
// looks through for one that has sent nothing.
const victimScan = 16

// victim chooses the unauthenticated connection to close for a new one,
// or nil when there is none: the oldest that has sent nothing among the
// oldest victimScan, else the oldest. A connection found to have sent the
// token is marked authenticated on the way and never chosen. l.mu is held.
func (l *Listener) victim() *conn {
	var spoke *conn
	seen := 0
	for e := l.unauth.Front(); e != nil && seen < victimScan; {
		c := e.Value.(*conn)
		next := e.Next()
		queued := queuedBytes(c.Conn)
		if queued == 0 && c.sent.Load() == 0 {
			return c
		}
		// Look for the token only in what has arrived since the last
		// look, so a connection that sent bytes without it costs one
		// ioctl per accept, not a copy and a search.
		if l.token != nil && queued > c.looked && c.sent.Load() < scanBytes {
			c.looked = queued
			n := peekQueued(c.Conn, l.peek[:min(queued, len(l.peek))])
			if bytes.Contains(l.peek[:n], l.token) {
				l.authenticate(c)
				e = next
				continue
			}
		}
		if spoke == nil {
			spoke = c
		}
		seen++
		e = next
	}
	if spoke != nil {
		return spoke
	}
	if e := l.unauth.Front(); e != nil {
		return e.Value.(*conn)
	}
	return nil
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

	// sent counts the bytes the server has read from the connection.
	sent atomic.Int64
	// looked is how many bytes were queued when victim last looked for
	// the token in them; guarded by l.mu.
	looked int
	// scanning is set while the server's reads are searched for the
	// token, and tail is the end of what it read last, so that a token
	// split between two reads is found. Only the connection's one reader
	// touches them.
	scanning bool
	tail     []byte
}

// Read reads from the connection and, while scanning, looks for the token
// in what it reads: found, the connection is authenticated.
func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n <= 0 {
		return n, err
	}
	total := c.sent.Add(int64(n))
	if !c.scanning {
		return n, err
	}
	buf := append(c.tail, p[:n]...)
	switch {
	case bytes.Contains(buf, c.l.token):
		c.scanning, c.tail = false, nil
		c.l.mu.Lock()
		c.l.authenticate(c)
		c.l.mu.Unlock()
	case total >= scanBytes:
		c.scanning, c.tail = false, nil
	default:
		keep := min(len(buf), len(c.l.token)-1)
		c.tail = append(c.tail[:0], buf[len(buf)-keep:]...)
	}
	return n, err
}

// Write writes p, each writeChunk of it within the listener's write
// timeout when it has one.
func (c *conn) Write(p []byte) (int, error) {
	if c.l.writeTimeout <= 0 {
		return c.Conn.Write(p)
	}
	n := 0
	for n < len(p) {
		if err := c.Conn.SetWriteDeadline(time.Now().Add(c.l.writeTimeout)); err != nil {
			return n, err
		}
		m, err := c.Conn.Write(p[n:min(len(p), n+writeChunk)])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
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
	c.l.authenticate(c)
	c.l.mu.Unlock()
}

// authenticate takes c off the unauthenticated list; l.mu is held.
func (l *Listener) authenticate(c *conn) {
	if c.elem != nil {
		l.unauth.Remove(c.elem)
		c.elem = nil
	}
}
