package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/capsule"
	"github.com/airlockhq/airlock/internal/session"
	"github.com/airlockhq/airlock/internal/wasm"
	"github.com/airlockhq/airlock/wire"
)

// Exit statuses of airlock run beyond the capsule's own.
const (
	exitRunTime = 124 // the capsule ran past its time limit
	exitRunTrap = 134 // the capsule trapped
	exitRunDisk = 137 // the capsule was stopped by the disk guard, as exec's sandbox is killed
)

func runCommand() *command {
	c := &command{
		name:     "run",
		sessions: true,
		summary:  "run a WebAssembly capsule (a packaged agent) under a grant, its tool calls through airlock",
		usage: `airlock run [flags] CAPSULE [-- ARGS...]

Runs CAPSULE, a WASI (preview 1) WebAssembly module under wazero: a .wasm
file, or a directory holding capsule.toml (name, version, module, its
sha256 and the grant it asks for). A module whose sha256 differs from the
pin is refused.

The capsule runs under what it asks for, each item checked against what
you grant (--grant, or --rw, --ro, --allow-host, --time, --memory, --env);
anything it asks for that you did not grant is refused before it starts,
with the flag that would grant it. A bare .wasm module runs under exactly
what you grant.

Its world is that grant and nothing more: granted directories as WASI
preopens at their own paths (read-only ones read-only; denied and protected
paths inside them kept as the grant says), only the granted environment,
its arguments, stdio, a clock and randomness, no sockets. Memory, wall time
and output are capped. Its tool calls (the airlock host module, see
docs/wasm.md) go through airlock's broker under the same grant: shell runs
in a fresh native sandbox, secrets are added by the broker and never reach
the capsule, and every call is in the audit log with the capsule's name,
version and hash.

Exit status: the capsule's own; 124 when it ran past its time limit, 134
when it trapped, 137 when the disk guard stopped it, 130 when SIGINT, SIGTERM or SIGHUP stopped it, 1 when it was
refused or could not start, 2 for bad usage.

Examples:
  airlock run ./examples/capsule-agent -- TODO
  airlock run --ro ~/data --memory 256MiB --time 30s tool.wasm -- input.txt`,
		flagHints: map[string]string{"cache": "there is no compilation cache: modules are compiled in memory every time, since machine code kept on disk could be replaced by a sandbox that can write there (docs/wasm.md)"},
	}
	c.run = func(ctx context.Context, env *Env, args []string) int {
		fs := newFlags(c, env)
		var gf grantFlags
		gf.register(fs)
		wall := fs.Duration("time", 0, "wall-time limit the capsule may have (e.g. 30s, 10m); default: the grant's")
		memory := fs.String("memory", "", "memory the capsule may have (e.g. 256MiB); default: the grant's")
		fs.Bool("no-cache", false, "no effect, kept for scripts: modules are always compiled in memory, and nothing compiled is kept on disk")
		var envs multiFlag
		fs.Var(&envs, "env", "grant `K=V` (or K, taking airlock's own value) to the capsule's environment (repeatable)")
		if code := parseFlags(c, env, fs, args); code >= 0 {
			return code
		}
		if fs.NArg() < 1 {
			fmt.Fprintln(env.Stderr, "airlock run: no capsule; usage: airlock run [flags] CAPSULE [-- ARGS...]")
			return exitUsage
		}
		path, capArgs := fs.Arg(0), fs.Args()[1:]
		if len(capArgs) > 0 && capArgs[0] == "--" {
			capArgs = capArgs[1:]
		}
		fail := func(format string, a ...any) int {
			fmt.Fprintf(env.Stderr, "airlock run: "+format+"\n", a...)
			return exitFailure
		}
		var envList []string
		for _, kv := range envs {
			k, _, ok := strings.Cut(kv, "=")
			if k == "" || strings.ContainsAny(k, " \t") {
				// Not echoed: without a NAME it may be the value alone.
				fmt.Fprintf(env.Stderr, "airlock run: --env wants NAME=VALUE or NAME; an argument of %d bytes has no such NAME (not shown: it may be a secret)\n", len(kv))
				return exitUsage
			}
			if !ok {
				kv = k + "=" + env.Getenv(k)
			}
			envList = append(envList, kv)
		}
		var lim grant.Limits
		lim.Time = *wall
		if *memory != "" {
			n, err := grant.ParseSize(*memory)
			if err != nil {
				fmt.Fprintf(env.Stderr, "airlock run: --memory %q is not a size (e.g. 256MiB)\n", *memory)
				return exitUsage
			}
			lim.Memory = n
		}

		cp, err := capsule.Load(path)
		if err != nil {
			return fail("%v", err)
		}
		user, err := gf.load(env)
		if err != nil {
			return fail("%v", err)
		}
		if lim != (grant.Limits{}) {
			cwd, _ := os.Getwd()
			if user, err = user.With(cwd, grant.Flags{Limits: lim}); err != nil {
				return fail("%v", err)
			}
		}
		cwd, err := os.Getwd()
		if err != nil {
			return fail("finding the current directory: %v", err)
		}
		g, environ, missing, err := cp.Resolve(user, cwd, envList)
		if err != nil {
			return fail("%v", err)
		}
		if len(missing) > 0 {
			fmt.Fprintf(env.Stderr, "airlock run: refusing %s: it asks for what was not granted:\n", cp.Name)
			for _, m := range missing {
				fmt.Fprintf(env.Stderr, "  - %s\n", m)
			}
			return exitFailure
		}
		warnScan(env, "airlock run", &gf, g)

		ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		defer stop()
		tools, files, closeTools, err := capsuleTools(env, &gf, g, cp)
		if err != nil {
			return fail("%v", err)
		}
		defer closeTools()

		eng, err := wasm.NewEngine(ctx)
		if err != nil {
			return fail("%v", err)
		}
		defer eng.Close(context.WithoutCancel(ctx))
		mod, err := eng.Compile(ctx, cp.Wasm)
		if err != nil {
			return fail("%s: %v", cp.Module, err)
		}
		l := g.LimitsFor("")
		cfg := &wasm.Config{
			Args:   append([]string{cp.Name}, capArgs...),
			Env:    environ,
			Dirs:   preopens(files),
			Stdin:  env.Stdin,
			Stdout: env.Stdout,
			Stderr: env.Stderr,
			Memory: l.Memory,
			Time:   l.Time,
			Output: 1 << 40, // the capsule's output is the user's, as with exec
			// Its files are bounded as a sandboxed command's are.
			FileSize: l.FileSize,
			Tools:    tools,
		}
		out, err := eng.Run(ctx, mod, cfg)
		if err != nil {
			return fail("%s: %v", cp.Name, err)
		}
		for _, hit := range out.LimitsHit {
			switch hit {
			case "time":
				fmt.Fprintf(env.Stderr, "airlock run: %s ran past its time limit (%s) and was stopped\n", cp.Name, l.Time)
			case "memory":
				fmt.Fprintf(env.Stderr, "airlock run: %s hit its memory limit (%s): a memory.grow was refused\n", cp.Name, grant.FormatSize(l.Memory))
			case "output":
				fmt.Fprintf(env.Stderr, "airlock run: %s passed the output limit; %d bytes were dropped\n", cp.Name, out.OmittedBytes)
			case "disk":
				fmt.Fprintf(env.Stderr, "airlock run: %s was stopped: it drove the disk it writes to below the free space airlock keeps (see airlock doctor)\n", cp.Name)
			}
		}
		switch {
		case out.Hit("time"):
			return exitRunTime
		case out.Hit("disk"):
			return exitRunDisk
		case ctx.Err() != nil:
			fmt.Fprintf(env.Stderr, "airlock run: %s was stopped by a signal\n", cp.Name)
			return 130
		case out.Trap != "":
			where := ""
			if out.Func != "" {
				where = " in " + out.Func
			}
			fmt.Fprintf(env.Stderr, "airlock run: %s trapped: %s%s\n", cp.Name, out.Trap, where)
			return exitRunTrap
		}
		return int(out.ExitCode & 0xff)
	}
	return c
}

// preopens are the grant's directories as WASI preopens at their own paths,
// each judged by g; granted files are left to the tools (a preopen is a
// directory). g must be the guarded grant (capsuleTools), which keeps
// airlock's own files from the capsule as from every sandbox.
func preopens(g *grant.Grant) []wasm.Dir {
	var out []wasm.Dir
	for _, m := range g.Mounts() {
		if !m.Dir {
			continue
		}
		out = append(out, wasm.Dir{
			Host:     m.Source,
			Guest:    filepath.ToSlash(m.Source),
			ReadOnly: !m.Writable,
			Grant:    g,
		})
	}
	return out
}

// capsuleTools opens the broker session the capsule's tool calls go
// through, and returns the function that serves them and the grant the
// capsule's own files are judged by: the session's, which keeps airlock's
// own files (the records, the grant files, the binary) from the capsule
// as from every sandbox (broker.GuardGrant). Where no sandbox can be built
// (no Linux, say), the capsule still runs, each tool call is answered with
// the reason, and the grant is guarded here.
func capsuleTools(env *Env, gf *grantFlags, g *grant.Grant, cp *capsule.Capsule) (wasm.ToolFunc, *grant.Grant, func(), error) {
	records, err := recordsDir(env, gf.records)
	if err != nil {
		return nil, nil, nil, err
	}
	sp, err := session.Prepare(gf.config(env, g))
	if err != nil {
		why := err.Error()
		guarded, err := broker.GuardGrant(g, records, gf.private)
		if err != nil {
			return nil, nil, nil, err
		}
		return func(context.Context, string, json.RawMessage) wire.ToolOutput {
			return wire.ToolOutput{Content: "[airlock: no tool can run here: " + why + "]", IsError: true}
		}, guarded, func() {}, nil
	}
	p := &sessionParts{Parts: sp}
	if err := p.openWasm(); err != nil {
		p.close()
		return nil, nil, nil, err
	}
	o := p.options()
	o.Capsule = &audit.Capsule{Name: cp.Name, Version: cp.Version, SHA256: cp.SHA256}
	o.Pool = -1
	s, err := broker.Open(o)
	if err != nil {
		p.close()
		return nil, nil, nil, err
	}
	sess := &oneSession{Session: s, parts: p}
	return func(ctx context.Context, tool string, args json.RawMessage) wire.ToolOutput {
		res, err := sess.Call(ctx, tool, args)
		if err != nil {
			return wire.ToolOutput{Content: "[airlock: the tool could not run]", IsError: true}
		}
		return res.Output
	}, s.Grant(), func() { _ = sess.Close() }, nil
}
