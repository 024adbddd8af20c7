package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/mcpserver"
	"github.com/airlockhq/airlock/tool"
)

// defaultShutdownTimeout is how long a stopping server waits for calls.
const defaultShutdownTimeout = 10 * time.Second

func mcpCommand() *command {
	c := &command{
		name:     "mcp",
		sessions: true,
		summary:  "serve the grant's tools to an MCP client over stdio",
		usage: `airlock mcp [--grant FILE] [flags]

Speaks the Model Context Protocol on stdin and stdout, for a client that
starts airlock as a subprocess (Claude Code, Codex, any MCP client). The
connection is one session: each tool call runs in a fresh sandbox built from
the grant and is written to the audit log. Logs go to stderr.

Example: claude mcp add airlock -- airlock mcp --grant ~/grants/project.toml`,
	}
	c.run = func(ctx context.Context, env *Env, args []string) int {
		fs := newFlags(c, env)
		var gf grantFlags
		gf.register(fs)
		verbose := fs.Bool("v", false, "log sessions and calls to stderr")
		shutdownTimeout := fs.Duration("shutdown-timeout", defaultShutdownTimeout, "on SIGTERM, how long calls in flight may finish before they are stopped")
		if code := parseFlags(c, env, fs, args); code >= 0 {
			return code
		}
		if fs.NArg() != 0 {
			return usageError(env, c, "unexpected argument %q", fs.Arg(0))
		}
		level := slog.LevelWarn
		if *verbose {
			level = slog.LevelInfo
		}
		logger := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: level}))
		srv, parts, err := newMCPServer(env, &gf, logger, false)
		if err != nil {
			fmt.Fprintf(env.Stderr, "airlock mcp: %v\n", err)
			return exitFailure
		}
		defer parts.close()
		// SIGHUP too (the terminal closed, the client's session ended):
		// uncaught, it killed the process before the session could stop
		// its background work and write their end records and its close.
		sig, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		defer stop()
		// airlock's own stdio transport: a malformed line is answered with a
		// JSON-RPC error and skipped, where the SDK's would end the session.
		t := &mcpserver.StdioTransport{Reader: env.Stdin, Writer: env.Stdout}
		done := make(chan error, 1)
		go func() { done <- srv.Serve(context.Background(), t) }()
		select {
		case err = <-done:
		case <-sig.Done():
			sctx, cancel := context.WithTimeout(context.Background(), *shutdownTimeout)
			if serr := srv.Shutdown(sctx); serr != nil {
				logger.Warn("shutdown", "err", serr)
			}
			cancel()
			// Every broker session is closed now. The MCP session ends
			// once its answers are written, which a client that stopped
			// reading stdout puts off for ever: past answerWait, leave
			// them unwritten.
			t := time.NewTimer(answerWait)
			select {
			case err = <-done:
			case <-t.C:
				logger.Warn("exiting with answers unwritten: the client is not reading them")
			}
			t.Stop()
		}
		if err != nil {
			fmt.Fprintf(env.Stderr, "airlock mcp: %v\n", err)
			return exitFailure
		}
		return exitOK
	}
	return c
}

// newMCPServer loads the grant and the backend once (secrets are read when a
// call needs one), and returns an MCP server that opens one broker session
// per MCP session with them. shared gives all those sessions one budget of
// sandboxes (broker.Admission): serve's clients together run no more calls
// and background work than one session alone may.
func newMCPServer(env *Env, f *grantFlags, logger *slog.Logger, shared bool) (*mcpserver.Server, *sessionParts, error) {
	p, err := f.prepare(env)
	if err != nil {
		return nil, nil, err
	}
	g := p.Grant
	for _, r := range f.warnings(g) {
		logger.Warn("a read-write tree the sandbox may not use in full", "risk", r)
	}
	tools := []*tool.Def{} // not nil: a grant may enable none
	for _, d := range tool.All() {
		if g.ToolEnabled(d.Name) {
			tools = append(tools, d)
		}
	}
	tools = append(tools, wasmDefs(g)...)
	metrics := mcpserver.NewMetrics()
	timed := metrics.Backend(p.Backend)
	var adm *broker.Admission
	if shared {
		adm = broker.NewAdmission(0, 0, 0)
	}
	open := func(ctx context.Context) (*broker.Session, error) {
		o := p.options()
		if shared {
			// serve lives for many sessions: each gets the tree as it is
			// now, so a repository an earlier session made is protected.
			o.Grant = o.Grant.Rescan()
		}
		o.Backend, o.Logger, o.Admission = timed, logger, adm
		return broker.Open(o)
	}
	srv, err := mcpserver.New(&mcpserver.Options{Open: open, Tools: tools, Metrics: metrics, Version: versionString(), Logger: logger, Grant: g})
	if err != nil {
		p.close()
		return nil, nil, err
	}
	return srv, p, nil
}
