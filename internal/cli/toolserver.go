package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/signal"
	"strings"
	"sync"

	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/connlimit"
	"github.com/airlockhq/airlock/internal/native"
	"github.com/airlockhq/airlock/internal/toolserver"
)

func toolServerCommand() *command {
	c := &command{
		name:     "tool-server",
		sessions: true,
		summary:  "be the remote hands of a broker: run its calls in sandboxes here",
		usage: `airlock tool-server [--root DIR | --grant FILE] [--listen ADDR --token-file FILE [--tls-cert F --tls-key F]] [flags]

Runs where the sandboxes are (another machine, a container). A broker
(airlock mcp, serve, call or exec with --remote) keeps the grant, the
secrets and the audit log and sends each call here over one connection;
every call runs in a fresh native sandbox, checked first against this
server's own grant, which caps whatever a broker asks.

Without --listen it speaks on stdin and stdout (the broker spawns it:
--remote "stdio:airlock tool-server --root DIR", or through podman exec -i,
kubectl exec -i, ssh). With --listen it serves WebSocket; every connection
needs the bearer token in --token-file, and plain ws:// is served only on a
loopback address unless --insecure-plain says otherwise: use --tls-cert and
--tls-key. See docs/remote.md.`,
	}
	c.run = func(ctx context.Context, env *Env, args []string) int {
		fs := newFlags(c, env)
		var gf grantFlags
		gf.register(fs)
		fs.Var(&gf.allowPrivate, "allow-private", "let the network reach the non-public `ADDR` (an IP[:PORT], a CIDR, or a name whose addresses may be private; repeatable): the grant's network.private")
		listen := fs.String("listen", "", "serve WebSocket on `ADDR` (host:port) instead of stdio")
		tokenFile := fs.String("token-file", "", "`FILE` holding the bearer token every WebSocket connection must present")
		certFile := fs.String("tls-cert", "", "TLS certificate `FILE` (PEM) for --listen")
		keyFile := fs.String("tls-key", "", "TLS key `FILE` (PEM) for --listen")
		insecure := fs.Bool("insecure-plain", false, "serve plain ws:// on a non-loopback address (the token crosses the network in clear)")
		name := fs.String("name", "", "name of these hands in the brokers' audit records (default: the host name)")
		heartbeat := fs.Duration("heartbeat", toolserver.DefaultHeartbeat, "heartbeat interval (at most "+toolserver.MaxHeartbeat.String()+"); a broker silent for 3 intervals is taken for dead and its sandboxes killed")
		maxConns := fs.Int("max-connections", toolserver.DefaultMaxConnections, "with --listen, hold at most `N` connections open: at the cap a new one takes the place of the oldest that has not shown the token, or is refused when all have")
		maxSandboxes := fs.Int("max-sandboxes", toolserver.DefaultMaxSandboxes, "run at most `N` sandboxes at once, for all brokers together; a call past that is refused")
		verbose := fs.Bool("v", false, "log connections and calls to stderr")
		if code := parseFlags(c, env, fs, args); code >= 0 {
			return code
		}
		fail := func(err error) int {
			fmt.Fprintf(env.Stderr, "airlock tool-server: %v\n", err)
			return exitFailure
		}
		if fs.NArg() != 0 {
			fs.Usage()
			return exitUsage
		}
		if *maxConns < 1 {
			fmt.Fprintf(env.Stderr, "airlock tool-server: --max-connections must be at least 1, got %d\n", *maxConns)
			return exitUsage
		}
		if *maxSandboxes < 1 {
			fmt.Fprintf(env.Stderr, "airlock tool-server: --max-sandboxes must be at least 1, got %d\n", *maxSandboxes)
			return exitUsage
		}
		if gf.unsandboxed || gf.remote.endpoint != "" {
			fmt.Fprintln(env.Stderr, "airlock tool-server: the hands always run calls in their own native sandboxes (no --unsandboxed, no --remote)")
			return exitUsage
		}
		level := slog.LevelWarn
		if *verbose {
			level = slog.LevelInfo
		}
		logger := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: level}))
		g, err := gf.load(env)
		if err != nil {
			return fail(err)
		}
		state, err := recordsDir(env, gf.records)
		if err != nil {
			state = ""
		}
		var token string
		var private []string
		if *listen != "" {
			if *tokenFile == "" {
				fmt.Fprintln(env.Stderr, "airlock tool-server: --listen needs --token-file: every connection must present the token")
				return exitUsage
			}
			b, err := readRegular(*tokenFile, maxTokenFile)
			if err != nil {
				return fail(fmt.Errorf("--token-file: %w", err))
			}
			if token = strings.TrimSpace(string(b)); len(token) < 16 {
				return fail(fmt.Errorf("--token-file %s: the token must be at least 16 characters", *tokenFile))
			}
			private = append(private, *tokenFile)
			if (*certFile == "") != (*keyFile == "") {
				fmt.Fprintln(env.Stderr, "airlock tool-server: --tls-cert and --tls-key go together")
				return exitUsage
			}
			if *keyFile != "" {
				private = append(private, *keyFile)
			}
			if *certFile == "" && !*insecure && !loopback(*listen) {
				return fail(fmt.Errorf("--listen %s: plain ws:// only on a loopback address; give --tls-cert and --tls-key (or --insecure-plain)", *listen))
			}
		}
		// The sandboxes never see this server's token, key or state.
		hide, keep := broker.OwnFiles(g, state, private)
		if state == "" {
			hide = hide[1:]
		}
		if g, err = g.Guard(hide, keep); err != nil {
			return fail(err)
		}
		backend, err := native.New(&native.Options{StateDir: state})
		if err != nil {
			return fail(err)
		}
		// No exit while the sandboxes' processes, cgroups or placeholders
		// (empty files at the missing protected names of the user's tree)
		// remain, as for every command that builds sandboxes: a call's
		// teardown may still run when its connection ends.
		if c, ok := backend.(io.Closer); ok {
			defer c.Close()
		}
		srv, err := toolserver.NewServer(&toolserver.ServerOptions{Grant: g, Backend: backend, Name: *name, Heartbeat: *heartbeat, MaxSandboxes: *maxSandboxes, Logger: logger})
		if err != nil {
			return fail(err)
		}
		sig, stop := signal.NotifyContext(ctx, stopSignals...)
		defer stop()
		if *listen == "" {
			conn := toolserver.StreamConn(env.Stdin, env.Stdout, nil)
			if err := srv.ServeConn(sig, conn); err != nil && sig.Err() == nil {
				return fail(err)
			}
			return exitOK
		}
		tcp, err := net.Listen("tcp", *listen)
		if err != nil {
			return fail(err)
		}
		// A name that looked local (localhost) may not have resolved to
		// loopback: then plain ws:// would carry the token, and the
		// calls, to every interface.
		if addr, ok := tcp.Addr().(*net.TCPAddr); *certFile == "" && !*insecure && (!ok || !addr.IP.IsLoopback()) {
			tcp.Close()
			return fail(fmt.Errorf("--listen %s resolved to %s, which is not a loopback address; give --tls-cert and --tls-key (or --insecure-plain)", *listen, tcp.Addr()))
		}
		// Connections without the token give way to those with it, so
		// clients that never authenticate cannot keep a broker out.
		// Over plain HTTP, a connection whose request carries the token is
		// taken as authenticated as soon as it arrives.
		var lo connlimit.Options
		if *certFile == "" {
			lo = connlimit.Options{Busy: "airlock tool-server: too many connections are open; try again shortly\n", Token: token}
		}
		var ln net.Listener = connlimit.New(tcp, *maxConns, &lo)
		hs := srv.HTTPServer(token)
		// A broker's connection is a WebSocket, which Shutdown neither
		// waits for nor ends: the end of serving ends it (and kills its
		// calls) through its request's context, and the command waits
		// for it.
		base, endAll := context.WithCancel(sig)
		defer endAll()
		hs.BaseContext = func(net.Listener) context.Context { return base }
		// serving counts the requests in hand; once the command waits for
		// them (stopped), a request that comes late (Shutdown gave up on a
		// slow one) is turned away rather than added to a WaitGroup being
		// waited on, which panics.
		var (
			serving sync.WaitGroup
			mu      sync.Mutex
			stopped bool
		)
		h := hs.Handler
		hs.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			if stopped {
				mu.Unlock()
				http.Error(w, "airlock tool-server: shutting down", http.StatusServiceUnavailable)
				return
			}
			serving.Add(1)
			mu.Unlock()
			defer serving.Done()
			h.ServeHTTP(w, r)
		})
		scheme := "ws"
		if *certFile != "" {
			certPEM, keyPEM, err := loadKeyPair(*certFile, *keyFile)
			if err != nil {
				return fail(fmt.Errorf("--tls-cert/--tls-key: %w", err))
			}
			cert, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				return fail(fmt.Errorf("--tls-cert/--tls-key: %w", err))
			}
			hs.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
			ln = tls.NewListener(ln, hs.TLSConfig)
			scheme = "wss"
		}
		// The one line a supervisor or a test reads to find the address.
		fmt.Fprintf(env.Stderr, "airlock tool-server: listening on %s://%s as %s\n", scheme, ln.Addr(), srv.Identity())
		done := make(chan error, 1)
		go func() { done <- hs.Serve(ln) }()
		select {
		case err = <-done:
		case <-sig.Done():
			sctx, cancel := context.WithTimeout(context.Background(), defaultShutdownTimeout)
			_ = hs.Shutdown(sctx)
			cancel()
			err = <-done
		}
		endAll()
		mu.Lock()
		stopped = true
		mu.Unlock()
		serving.Wait()
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fail(err)
		}
		return exitOK
	}
	return c
}

// loopback reports whether addr (host:port) names a loopback address.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
