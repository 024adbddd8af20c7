package mcpserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/internal/connlimit"
)

// DefaultMaxBodyBytes caps an HTTP request body when HTTPOptions leave it zero.
const DefaultMaxBodyBytes = 4 << 20

// Paths the HTTP handler serves.
const (
	PathMCP     = "/mcp"     // streamable HTTP MCP endpoint
	PathHealth  = "/healthz" // liveness: 200 "ok", 503 while shutting down; no token needed
	PathMetrics = "/metrics" // Prometheus text format; token needed
)

// HTTPOptions configure Server.Handler. Handler copies them.
type HTTPOptions struct {
	// Token is the bearer token that requests to /mcp and /metrics must
	// carry ("Authorization: Bearer TOKEN"). Required unless NoAuth.
	Token string
	// NoAuth serves without a token. Only for a listener on a loopback
	// address; the caller checks that.
	NoAuth bool
	// MaxBodyBytes caps a request body; a larger one is refused with 413.
	// Zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxSessions caps the MCP sessions kept at once; an initialize past it
	// is refused with 503 and a JSON-RPC error naming the cap. Zero means
	// DefaultMaxSessions.
	MaxSessions int
	// SessionIdleTimeout closes an MCP session, and its broker session, after
	// this long without a request from its client. Zero keeps idle sessions
	// until the client ends them.
	SessionIdleTimeout time.Duration
	// BodyTimeout bounds the reading of a request body, on every path; a
	// client slower than that gets 408 (or the path's own answer, for a body
	// the path does not read) and the connection is closed. Zero means
	// DefaultBodyTimeout.
	BodyTimeout time.Duration
	// AllowOrigins are browser origins ("https://app.example:8443") allowed
	// besides loopback ones and those whose host is the address the request
	// arrived on. A request with any other Origin header is refused with 403.
	AllowOrigins []string
	// Connections, when set, is the listener whose open, refused and
	// evicted connections /metrics reports.
	Connections *connlimit.Listener
}

// DefaultBodyTimeout is how long a client may take to send a request body.
const DefaultBodyTimeout = 30 * time.Second

// Handler returns the HTTP handler serving MCP over streamable HTTP at
// PathMCP, one MCP session (and one broker session) per Mcp-Session-Id,
// plus PathHealth and PathMetrics.
func (s *Server) Handler(opts *HTTPOptions) (http.Handler, error) {
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	if o.Token == "" && !o.NoAuth {
		return nil, errors.New("mcpserver: HTTPOptions need a Token or NoAuth")
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	sessions := &sessionCap{max: o.MaxSessions, live: func() int {
		n := 0
		for range s.mcp.Sessions() {
			n++
		}
		return n
	}}
	origins, err := parseOrigins(o.AllowOrigins)
	if err != nil {
		return nil, err
	}
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Logger:              s.logger,
		SessionTimeout:      o.SessionIdleTimeout,
		MaxRequestBodyBytes: o.MaxBodyBytes,
	})
	auth := func(h http.Handler) http.Handler {
		if o.NoAuth {
			// Every client is as good as any: none gives way to another.
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				connlimit.Authenticated(r.Context())
				h.ServeHTTP(w, r)
			})
		}
		return requireToken(o.Token, h)
	}
	mux := http.NewServeMux()
	mux.Handle(PathMCP, auth(limitBody(o.MaxBodyBytes, checkPost(o.BodyTimeout, sessions, s.stopOnDelete(streamable)))))
	mux.HandleFunc("GET "+PathHealth, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if s.isDraining() {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("shutting down\n"))
			return
		}
		w.Write([]byte("ok\n"))
	})
	mux.Handle("GET "+PathMetrics, auth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		if err := s.writeMetrics(w, o.Connections, sessions); err != nil {
			s.logger.Debug("writing metrics", "err", err)
		}
	})))
	// Every path, /healthz and /metrics included, checks Host and Origin,
	// and bounds the wait for a body.
	return bodyDeadline(o.BodyTimeout, checkHost(checkOrigin(origins, mux))), nil
}

// bodyDeadline bounds the time the body of any request may take to
// arrive. checkPost reads the body of a JSON POST to /mcp under a deadline
// of its own, and lifts it; every other body (of a request refused, of
// /healthz, of a path not served, of a DELETE) net/http reads itself, up to
// 256 KiB, before it answers, to keep the connection: with no deadline that
// read waited, answer unsent, for as long as the client kept the
// connection open, token or not. A body not in by timeout closes the
// connection after the answer.
func bodyDeadline(timeout time.Duration, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 {
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout))
		}
		h.ServeHTTP(w, r)
	})
}

func (s *Server) isDraining() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.draining
}

// requireToken refuses a request without "Authorization: Bearer token" with
// 401 and closes its connection after the answer; a request with it marks
// its connection authenticated (connlimit). The comparison takes the same
// time whatever the presented value.
func requireToken(token string, h http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := bearer(r.Header.Get("Authorization"))
		sum := sha256.Sum256([]byte(got))
		if subtle.ConstantTimeCompare(sum[:], want[:]) != 1 || !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="airlock"`)
			w.Header().Set("Connection", "close")
			http.Error(w, "a bearer token is required (Authorization: Bearer TOKEN)", http.StatusUnauthorized)
			return
		}
		connlimit.Authenticated(r.Context())
		h.ServeHTTP(w, r)
	})
}

// bearer extracts the token of an "Authorization: Bearer TOKEN" header.
func bearer(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// stopOnDelete stops the calls of a session its client ends with DELETE
// before the SDK closes it, which would otherwise wait for them to finish.
// It also counts the POSTs being served, for Shutdown.
func (s *Server) stopOnDelete(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			s.owed.add(1)
			defer s.owed.add(-1)
		}
		if id := r.Header.Get("Mcp-Session-Id"); r.Method == http.MethodDelete && id != "" {
			for ss := range s.mcp.Sessions() {
				if ss.ID() == id {
					s.release(ss)
				}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// limitBody refuses a request whose declared length passes max with 413
// before reading it; the MCP handler enforces the same cap while reading a
// body of unknown length.
func limitBody(max int64, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			w.Header().Set("Connection", "close")
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, max)
		h.ServeHTTP(w, r)
	})
}
