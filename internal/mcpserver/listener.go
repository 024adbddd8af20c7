package mcpserver

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of the HTTP server NewHTTPServer builds and of the connection cap.
const (
	// DefaultHeaderTimeout bounds the wait for a request's headers, the
	// first request's included: a connection that says nothing is closed.
	DefaultHeaderTimeout = 10 * time.Second
	// DefaultIdleConnTimeout closes a kept-alive connection this long after
	// its last response.
	DefaultIdleConnTimeout = 2 * time.Minute
	// DefaultMaxConnections caps the connections open at once.
	DefaultMaxConnections = 256
)

// HTTPServerOptions configure NewHTTPServer.
type HTTPServerOptions struct {
	// HeaderTimeout is DefaultHeaderTimeout when zero.
	HeaderTimeout time.Duration
	// IdleTimeout is DefaultIdleConnTimeout when zero.
	IdleTimeout time.Duration
	// TLS, when set, is the server's TLS configuration (serve with
	// ServeTLS(l, "", "")).
	TLS *tls.Config
	// Logger receives the server's own errors; nil discards.
	Logger *slog.Logger
}

// NewHTTPServer returns the http.Server that serves h. It has no read or
// write timeout for a whole request, since a tool call may run for minutes
// and its answer streams: the header timeout, the idle timeout, the body
// timeout of Handler and the connection cap of LimitListener bound what a
// client that sends slowly, or nothing, can hold.
func NewHTTPServer(h http.Handler, o *HTTPServerOptions) *http.Server {
	var opts HTTPServerOptions
	if o != nil {
		opts = *o
	}
	if opts.HeaderTimeout <= 0 {
		opts.HeaderTimeout = DefaultHeaderTimeout
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleConnTimeout
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: opts.HeaderTimeout,
		IdleTimeout:       opts.IdleTimeout,
		TLSConfig:         opts.TLS,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// LimitListener caps the connections open at once: one accepted beyond the
// cap is closed at once (after a 503 response, for plain HTTP), so a client
// that opens connections and holds them cannot exhaust the process. It counts
// what it holds and refuses, for /metrics.
type LimitListener struct {
	net.Listener
	max       int
	plainHTTP bool
	open      atomic.Int64
	refused   atomic.Uint64
}

// NewLimitListener returns inner capped at max connections (max > 0).
// plainHTTP says the connections carry HTTP without TLS, so a refused one
// can be told why in a response.
func NewLimitListener(inner net.Listener, max int, plainHTTP bool) *LimitListener {
	return &LimitListener{Listener: inner, max: max, plainHTTP: plainHTTP}
}

// busyResponse is what a refused plain-HTTP connection reads.
var busyResponse = func() []byte {
	const body = "airlock serve: too many connections are open; try again shortly\n"
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}()

// Accept returns the next connection within the cap, closing those beyond it.
func (l *LimitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= int64(l.max) {
			return &limitedConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		l.refused.Add(1)
		if l.plainHTTP {
			// A fresh socket's send buffer is empty: this does not block.
			_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			_, _ = c.Write(busyResponse)
		}
		c.Close()
	}
}

// Max returns the cap.
func (l *LimitListener) Max() int { return l.max }

// Open returns the number of connections open now.
func (l *LimitListener) Open() int { return int(l.open.Load()) }

// Refused returns the number of connections refused so far.
func (l *LimitListener) Refused() uint64 { return l.refused.Load() }

// limitedConn gives its slot back when closed.
type limitedConn struct {
	net.Conn
	l    *LimitListener
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}

// CloseWrite half-closes a TCP connection, which net/http uses to end a
// response cleanly before closing; other connections are closed outright.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}
