package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/airlockhq/airlock/internal/mcpserver"
)

// minTokenLength is the shortest bearer token serve accepts.
const minTokenLength = 16

func serveCommand() *command {
	c := &command{
		name:    "serve",
		summary: "serve the grant's tools over MCP streamable HTTP",
		usage: `airlock serve --listen ADDR [--grant FILE] [--token-file FILE] [flags]

Serves the Model Context Protocol over streamable HTTP at http://ADDR/mcp, one
broker session per MCP session. Every request to /mcp and /metrics must carry
"Authorization: Bearer TOKEN": the token comes from --token-file, else from
$AIRLOCK_TOKEN, else one is generated and printed to stderr. GET /healthz
needs no token. On SIGTERM or SIGINT the server stops taking calls, waits up
to --shutdown-timeout for the calls in flight, then stops them.

Example: airlock serve --listen 127.0.0.1:8765 --grant project.toml`,
	}
	c.run = func(ctx context.Context, env *Env, args []string) int {
		fs := newFlags(c, env)
		var gf grantFlags
		gf.register(fs)
		listen := fs.String("listen", "", "`ADDR` to listen on, host:port (required)")
		tokenFile := fs.String("token-file", "", "read the bearer token from `FILE`")
		noAuth := fs.Bool("insecure-no-auth", false, "serve without a token (loopback addresses only)")
		shutdownTimeout := fs.Duration("shutdown-timeout", defaultShutdownTimeout, "on SIGTERM, how long calls in flight may finish before they are stopped")
		maxBody := fs.Int64("max-body-bytes", mcpserver.DefaultMaxBodyBytes, "refuse request bodies larger than `N` bytes (413)")
		idle := fs.Duration("idle-timeout", time.Hour, "end an MCP session after this long without a request (0: never)")
		quiet := fs.Bool("q", false, "log only warnings and errors")
		if code := parseFlags(fs, args); code >= 0 {
			return code
		}
		if fs.NArg() != 0 || *listen == "" {
			fs.Usage()
			return exitUsage
		}
		level := slog.LevelInfo
		if *quiet {
			level = slog.LevelWarn
		}
		logger := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: level}))

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
		ln, err := net.Listen("tcp", *listen)
		if err != nil {
			fmt.Fprintf(env.Stderr, "airlock serve: %v\n", err)
			return exitFailure
		}
		defer ln.Close()
		if addr, ok := ln.Addr().(*net.TCPAddr); *noAuth && (!ok || !addr.IP.IsLoopback()) {
			fmt.Fprintf(env.Stderr, "airlock serve: --insecure-no-auth needs a loopback address (127.0.0.1 or [::1]), not %s\n", ln.Addr())
			return exitUsage
		}

		if *tokenFile != "" {
			// The token file is airlock's own: no sandbox may read it.
			if abs, err := filepath.Abs(*tokenFile); err == nil {
				gf.private = append(gf.private, abs)
			}
		}
		srv, parts, err := newMCPServer(env, &gf, logger)
		if err != nil {
			fmt.Fprintf(env.Stderr, "airlock serve: %v\n", err)
			return exitFailure
		}
		defer parts.close()
		h, err := srv.Handler(&mcpserver.HTTPOptions{Token: token, NoAuth: *noAuth, MaxBodyBytes: *maxBody, SessionIdleTimeout: *idle})
		if err != nil {
			fmt.Fprintf(env.Stderr, "airlock serve: %v\n", err)
			return exitFailure
		}
		hs := &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		}
		fmt.Fprintf(env.Stderr, "airlock serve: serving MCP at http://%s%s (health %s, metrics %s)\n", ln.Addr(), mcpserver.PathMCP, mcpserver.PathHealth, mcpserver.PathMetrics)

		sig, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		served := make(chan error, 1)
		go func() { served <- hs.Serve(ln) }()
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

// answerWait is how long the HTTP server may take, after the calls have
// ended, to send their answers.
const answerWait = 3 * time.Second

// serveToken returns the bearer token: from file, else $AIRLOCK_TOKEN, else a
// new random one (generated reports which). Errors never hold the token.
func serveToken(env *Env, file string) (token string, generated bool, err error) {
	switch {
	case file != "":
		data, err := os.ReadFile(file)
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
