package cli

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/airlockhq/airlock/internal/connlimit"
	"github.com/airlockhq/airlock/internal/mcpserver"
)

// minTokenLength is the shortest bearer token serve accepts.
const minTokenLength = 16

func serveCommand() *command {
	c := &command{
		name:     "serve",
		sessions: true,
		summary:  "serve the grant's tools over MCP streamable HTTP",
		usage: `airlock serve --listen ADDR [--grant FILE] [--token-file FILE] [flags]

Serves the Model Context Protocol over streamable HTTP at http://ADDR/mcp, one
broker session per MCP session. Every request to /mcp and /metrics must carry
"Authorization: Bearer TOKEN": the token comes from --token-file, else from
$AIRLOCK_TOKEN, else one is generated and printed to stderr. GET /healthz
needs no token. A non-loopback ADDR needs --tls-cert and --tls-key (HTTPS),
or --insecure-plain-http to say the traffic, token included, goes unencrypted.
A browser request whose Origin is not loopback, not the address it reached,
and not an --allow-origin is refused. On SIGTERM or SIGINT the server stops
taking calls, waits up to --shutdown-timeout for the calls in flight, then
stops them.

Example: airlock serve --listen 127.0.0.1:8765 --grant project.toml`,
	}
	c.run = func(ctx context.Context, env *Env, args []string) int {
		fs := newFlags(c, env)
		var gf grantFlags
		gf.register(fs)
		listen := fs.String("listen", "", "`ADDR` to listen on, host:port (required)")
		tokenFile := fs.String("token-file", "", "read the bearer token from `FILE`")
		noAuth := fs.Bool("insecure-no-auth", false, "serve without a token (loopback addresses only)")
		tlsCert := fs.String("tls-cert", "", "serve HTTPS with the certificate (chain) in PEM `FILE`; needs --tls-key")
		tlsKey := fs.String("tls-key", "", "the private key of --tls-cert, PEM `FILE`")
		plain := fs.Bool("insecure-plain-http", false, "allow plain HTTP on a non-loopback address (the token travels unencrypted)")
		var origins multiFlag
		fs.Var(&origins, "allow-origin", "also accept browser requests from `ORIGIN`, e.g. https://app.example:8443 (repeatable)")
		maxConns := fs.Int("max-connections", mcpserver.DefaultMaxConnections, "hold at most `N` connections open: at the cap a new one takes the place of the oldest that has not shown the token, or is refused when all have")
		shutdownTimeout := fs.Duration("shutdown-timeout", defaultShutdownTimeout, "on SIGTERM, how long calls in flight may finish before they are stopped")
		maxBody := fs.Int64("max-body-bytes", mcpserver.DefaultMaxBodyBytes, "refuse request bodies larger than `N` bytes (413)")
		maxSessions := fs.Int("max-sessions", mcpserver.DefaultMaxSessions, "keep at most `N` MCP sessions at once; one more initialize is refused (503)")
		idle := fs.Duration("idle-timeout", time.Hour, "end an MCP session after this long without a request (0: never)")
		quiet := fs.Bool("q", false, "log only warnings and errors")
		if code := parseFlags(c, env, fs, args); code >= 0 {
			return code
		}
		if fs.NArg() != 0 {
			return usageError(env, c, "unexpected argument %q", fs.Arg(0))
		}
		if *listen == "" {
			return usageError(env, c, "--listen ADDR is required (e.g. --listen 127.0.0.1:8765)")
		}
		level := slog.LevelInfo
		if *quiet {
			level = slog.LevelWarn
		}
		logger := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: level}))
		// Every refusal of the settings comes before the port is opened.
		loopback, err := loopbackListen(*listen)
		if err != nil {
			fmt.Fprintf(env.Stderr, "airlock serve: --listen %q: %v\n", *listen, err)
			return exitUsage
		}
		if *noAuth && !loopback {
			fmt.Fprintf(env.Stderr, "airlock serve: --insecure-no-auth needs a loopback address (127.0.0.1 or [::1]), not %s\n", *listen)
			return exitUsage
		}
		tlsConf, err := serveTLS(*tlsCert, *tlsKey)
		if err != nil {
			fmt.Fprintf(env.Stderr, "airlock serve: %v\n", err)
			return exitUsage
		}
		if !loopback && tlsConf == nil && !*plain {
			fmt.Fprintf(env.Stderr, "airlock serve: --listen %s is not a loopback address: serve HTTPS with --tls-cert and --tls-key, or pass --insecure-plain-http to send the token and every call unencrypted\n", *listen)
			return exitUsage
		}
		if *maxConns < 1 {
			fmt.Fprintf(env.Stderr, "airlock serve: --max-connections must be at least 1, got %d\n", *maxConns)
			return exitUsage
		}
		if *maxSessions < 1 {
			fmt.Fprintf(env.Stderr, "airlock serve: --max-sessions must be at least 1, got %d\n", *maxSessions)
			return exitUsage
		}
		if err := mcpserver.CheckOrigins(origins); err != nil {
			fmt.Fprintf(env.Stderr, "airlock serve: --allow-origin: %v\n", err)
			return exitUsage
		}

		var token string
		if !*noAuth {
			var generated bool
			var err error
			token, generated, err = serveToken(env, *tokenFile)
			if err != nil {
				fmt.Fprintf(env.Stderr, "airlock serve: %v\n", err)
				return exitUsage
			}
			if generated {
				fmt.Fprintf(env.Stderr, "airlock serve: no --token-file or AIRLOCK_TOKEN; clients must send this token (Authorization: Bearer TOKEN):\n%s\n", token)
			}
		}
		tcp, err := net.Listen("tcp", *listen)
		if err != nil {
			fmt.Fprintf(env.Stderr, "airlock serve: %v\n", err)
			return exitFailure
		}
		defer tcp.Close()
		// A name that looked local may not have resolved to loopback.
		if addr, ok := tcp.Addr().(*net.TCPAddr); (*noAuth || tlsConf == nil && !*plain) && (!ok || !addr.IP.IsLoopback()) {
			fmt.Fprintf(env.Stderr, "airlock serve: --listen %s resolved to %s, which is not a loopback address\n", *listen, tcp.Addr())
			return exitUsage
		}
		// Connections that have not shown the token give way to new ones,
		// so clients without it cannot keep those with it out.
		// Over plain HTTP, a connection whose request carries the token is
		// taken as authenticated as soon as it arrives.
		lo := connlimit.Options{WriteTimeout: mcpserver.WriteTimeout}
		if tlsConf == nil {
			lo.Busy, lo.Token = mcpserver.BusyText, token
		}
		ln := connlimit.New(tcp, *maxConns, &lo)

		// The token file and the TLS private key are airlock's own: no
		// sandbox may read them (with the key it could pose as this
		// server and take the clients' token).
		for _, f := range []string{*tokenFile, *tlsKey} {
			if abs, err := filepath.Abs(f); f != "" && err == nil {
				gf.private = append(gf.private, abs)
			}
		}
		srv, parts, err := newMCPServer(env, &gf, logger, true)
		if err != nil {
			fmt.Fprintf(env.Stderr, "airlock serve: %v\n", err)
			return exitFailure
		}
		defer parts.close()
		h, err := srv.Handler(&mcpserver.HTTPOptions{Token: token, NoAuth: *noAuth, MaxBodyBytes: *maxBody,
			MaxSessions: *maxSessions, SessionIdleTimeout: *idle, AllowOrigins: origins, Connections: ln})
		if err != nil {
			fmt.Fprintf(env.Stderr, "airlock serve: %v\n", err)
			return exitFailure
		}
		hs := mcpserver.NewHTTPServer(h, &mcpserver.HTTPServerOptions{TLS: tlsConf, Logger: logger})
		scheme := "https"
		if tlsConf == nil {
			scheme = "http"
			if !loopback {
				logger.Warn("serving plain HTTP on a non-loopback address: the bearer token and every call and result cross the network unencrypted (--insecure-plain-http)", "listen", tcp.Addr().String())
			}
		}
		fmt.Fprintf(env.Stderr, "airlock serve: serving MCP at %s://%s%s (health %s, metrics %s)\n", scheme, tcp.Addr(), mcpserver.PathMCP, mcpserver.PathHealth, mcpserver.PathMetrics)

		// SIGHUP shuts down as SIGTERM does: uncaught, it killed the
		// process before its sessions were closed and recorded.
		sig, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		defer stop()
		served := make(chan error, 1)
		go func() {
			if tlsConf != nil {
				served <- hs.ServeTLS(ln, "", "")
				return
			}
			served <- hs.Serve(ln)
		}()
		select {
		case err := <-served:
			fmt.Fprintf(env.Stderr, "airlock serve: %v\n", err)
			srv.Shutdown(context.Background())
			return exitFailure
		case <-sig.Done():
		}
		stop()
		logger.Info("shutting down", "wait_for_calls", shutdownTimeout.String())
		// Stop accepting connections; requests in flight carry on.
		httpDone := make(chan error, 1)
		hctx, hcancel := context.WithTimeout(context.Background(), *shutdownTimeout+answerWait)
		defer hcancel()
		go func() { httpDone <- hs.Shutdown(hctx) }()
		sctx, scancel := context.WithTimeout(context.Background(), *shutdownTimeout)
		if err := srv.Shutdown(sctx); err != nil {
			logger.Warn("shutdown", "err", err)
		}
		scancel()
		if err := <-httpDone; err != nil && !errors.Is(err, context.DeadlineExceeded) {
			logger.Warn("http shutdown", "err", err)
		}
		hs.Close()
		return exitOK
	}
	return c
}

// loopbackListen reports whether a listen address names only loopback: its
// host is "localhost" or a loopback IP. An empty host (":8765") is every
// interface.
func loopbackListen(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	if strings.EqualFold(host, "localhost") {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// serveTLS loads the certificate and key for HTTPS, or returns nil when
// neither is given.
func serveTLS(certFile, keyFile string) (*tls.Config, error) {
	switch {
	case certFile == "" && keyFile == "":
		return nil, nil
	case certFile == "" || keyFile == "":
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	certPEM, keyPEM, err := loadKeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert %s, --tls-key %s: %w", certFile, keyFile, err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert %s, --tls-key %s: %w", certFile, keyFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// answerWait is how long the HTTP server may take, after the calls have
// ended, to send their answers.
const answerWait = 3 * time.Second

// serveToken returns the bearer token: from file, else $AIRLOCK_TOKEN, else a
// new random one (generated reports which). Errors never hold the token.
func serveToken(env *Env, file string) (token string, generated bool, err error) {
	switch {
	case file != "":
		data, err := readRegular(file, maxTokenFile)
		if err != nil {
			return "", false, fmt.Errorf("--token-file: %w", err)
		}
		token = strings.TrimSpace(string(data))
		if err := checkToken(token); err != nil {
			return "", false, fmt.Errorf("--token-file %s: %w", file, err)
		}
		return token, false, nil
	case env.Getenv("AIRLOCK_TOKEN") != "":
		token = strings.TrimSpace(env.Getenv("AIRLOCK_TOKEN"))
		if err := checkToken(token); err != nil {
			return "", false, fmt.Errorf("AIRLOCK_TOKEN: %w", err)
		}
		return token, false, nil
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", false, fmt.Errorf("generating a token: %w", err)
	}
	return hex.EncodeToString(b), true, nil
}

// checkToken refuses a token too short to resist guessing, or one that cannot
// travel in a header.
func checkToken(token string) error {
	if len(token) < minTokenLength {
		return fmt.Errorf("the token is shorter than %d characters", minTokenLength)
	}
	for _, r := range token {
		if r <= ' ' || r >= 0x7f {
			return errors.New("the token must be printable ASCII without spaces")
		}
	}
	return nil
}
