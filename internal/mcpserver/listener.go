package mcpserver

import (
	"crypto/tls"
	"log/slog"
	"net/http"
	"time"

	"github.com/airlockhq/airlock/internal/connlimit"
)

// Defaults of the HTTP server NewHTTPServer builds and of the connection cap.
const (
	// DefaultHeaderTimeout bounds the wait for a request's headers, the
	// first request's included: a connection that says nothing is closed.
	DefaultHeaderTimeout = 10 * time.Second
	// DefaultIdleConnTimeout closes a kept-alive connection this long after
	// its last response.
	DefaultIdleConnTimeout = 2 * time.Minute
	// WriteTimeout is the connlimit.Options.WriteTimeout of `airlock
	// serve`: a client must take each 64 KiB of an answer within it, or
	// the server drops the answer and closes the connection. Without it a
	// client that stopped reading held the answer's writer, and its
	// session, which cannot close with an answer unwritten, and so Shutdown
	// too, for as long as it kept the connection open.
	WriteTimeout = 30 * time.Second
	// DefaultMaxConnections caps the connections open at once (see
	// connlimit: those that have not shown the token give way to new ones).
	DefaultMaxConnections = 256
	// MaxHeaderBytes caps a request's header block; a larger one is
	// answered 431 and its connection closed. MCP's headers (a bearer
	// token, Mcp-Session-Id, Accept...) take a few hundred bytes; net/http's
	// default of 1 MiB let each connection, before it shows the token,
	// make the server hold 1 MiB for the header timeout.
	MaxHeaderBytes = 64 << 10
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

// NewHTTPServer returns the http.Server that serves h, to serve on a
// connlimit.Listener (its ConnContext lets Handler mark the connections
// that show the token). It serves HTTP/1.1 only, one request at a time on a
// connection, so the connection cap bounds the requests in flight. It has
// no read or write timeout for a whole
// request, since a tool call may run for minutes and its answer streams:
// the header timeout, the idle timeout, the body timeout of Handler, the
// close after a refusal, the connection cap and the listener's write
// timeout (WriteTimeout) bound what a client that sends slowly, or
// nothing, or reads nothing, or has no token, can hold.
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
	// HTTP/1.1 only, over HTTPS too: an HTTP/2 connection carries up to
	// 250 requests at once, which would make the connection cap (and the
	// body cap with it) no bound on the requests, and their bodies, that a
	// client holds.
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	return &http.Server{
		Protocols:         &protocols,
		Handler:           h,
		ReadHeaderTimeout: opts.HeaderTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		IdleTimeout:       opts.IdleTimeout,
		TLSConfig:         opts.TLS,
		ConnContext:       connlimit.ConnContext,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// BusyText is what a plain-HTTP connection refused at the cap reads, for
// connlimit.New.
const BusyText = "airlock serve: too many connections are open; try again shortly\n"
