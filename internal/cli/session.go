package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/session"
	"github.com/airlockhq/airlock/tool"
)

// grantFlags are the flags every command that runs calls shares.
type grantFlags struct {
	grantFile   string
	unsandboxed bool
	root        string
	readWrite   multiFlag
	readOnly    multiFlag
	allowHosts  multiFlag
	// allowPrivate are network.private entries (tool-server only: the
	// hands' pod of a kube:// session gets its grant's).
	allowPrivate multiFlag
	records      string
	// private are more of airlock's own files (a token file) that no
	// sandbox may see; not a flag.
	private []string
	// allowUnenforced runs calls whose memory and process limits the host
	// cannot enforce, instead of refusing them.
	allowUnenforced bool
	// sandboxOnly leaves out --unsandboxed (exec always sandboxes).
	sandboxOnly bool
	// remote picks remote hands for the sandboxes (remote.go).
	remote remoteFlags
	// backend and image choose the sandbox backend (chooseBackend).
	backend, image string
}

func (f *grantFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.grantFile, "grant", "", "grant `FILE` (TOML); default: the current directory read-write, no network")
	if !f.sandboxOnly {
		fs.BoolVar(&f.unsandboxed, "unsandboxed", false, "run WITHOUT a sandbox (no isolation; every result is labelled UNSANDBOXED)")
	}
	fs.StringVar(&f.root, "root", "", "`DIR` to grant read-write instead of the current directory")
	fs.Var(&f.readWrite, "rw", "grant `PATH` read-write (repeatable)")
	fs.Var(&f.readOnly, "ro", "grant `PATH` read-only (repeatable)")
	fs.Var(&f.allowHosts, "allow-host", "let the network reach `HOST[:PORT]` (repeatable; *.suffix allowed)")
	fs.StringVar(&f.records, "records", "", "records `DIR` for audit logs (default $AIRLOCK_STATE_DIR, else $XDG_STATE_HOME/airlock/sessions, else ~/.local/state/airlock/sessions)")
	fs.StringVar(&f.backend, "backend", "", "sandbox `BACKEND`: linux (default) or podman (default: the grant's [runner] backend)")
	fs.StringVar(&f.image, "image", "", "container `IMAGE` for --backend podman, pinned as NAME@sha256:<digest> (default: the grant's [runner] image)")
	fs.BoolVar(&f.allowUnenforced, "allow-unenforced-limits", false, "run even where the host cannot enforce the memory and process limits (no cgroup this user may manage; see airlock doctor); every result says NOT ENFORCED")
	f.remote.register(fs)
}

// load builds the grant the flags describe.
func (f *grantFlags) load(env *Env) (*grant.Grant, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("finding the current directory: %w", err)
	}
	if f.root != "" {
		abs, err := filepath.Abs(f.root)
		if err != nil {
			return nil, fmt.Errorf("--root %q: %w", f.root, err)
		}
		cwd = abs
	}
	if f.grantFile != "" {
		g, err := grant.Load(f.grantFile)
		if err != nil {
			return nil, err
		}
		if len(f.readWrite)+len(f.readOnly)+len(f.allowHosts)+len(f.allowPrivate) > 0 || f.allowUnenforced {
			return g.With(cwd, grant.Flags{ReadWrite: f.readWrite, ReadOnly: f.readOnly, AllowHosts: f.allowHosts, Private: f.allowPrivate, AllowUnenforcedLimits: f.allowUnenforced})
		}
		return g, nil
	}
	// The working directory is granted read-write unless a flag names it.
	rw := []string(f.readWrite)
	if !names(cwd, f.readWrite) && !names(cwd, f.readOnly) {
		rw = append([]string{cwd}, rw...)
	}
	fl := grant.Flags{ReadWrite: rw, ReadOnly: f.readOnly, AllowHosts: f.allowHosts, Private: f.allowPrivate, AllowUnenforcedLimits: f.allowUnenforced}
	return grant.FromFlags(cwd, fl)
}

// recordsDir is where session records go (session.RecordsDir).
func recordsDir(env *Env, flagValue string) (string, error) {
	return session.RecordsDir(flagValue, env.Getenv)
}

// config is the session constructor's input the flags describe over g.
func (f *grantFlags) config(env *Env, g *grant.Grant) *session.Config {
	c := &session.Config{
		Grant: g, RecordsDir: f.records, Getenv: env.Getenv, Unsandboxed: f.unsandboxed,
		Backend: f.backend, Image: f.image, Private: f.private,
	}
	if rf := f.remote.fromGrant(g); rf.endpoint != "" {
		c.Remote = func(local sandbox.Backend, private *[]string) (sandbox.Backend, error) {
			return rf.wrap(context.Background(), env, local, private)
		}
	}
	return c
}

// sessionParts is what every session a command opens shares: the grant,
// the backend, the root file tools resolve beneath, the records directory,
// how the grant's secrets are read (session.Parts), and the grant's wasm
// tools.
type sessionParts struct {
	*session.Parts
	wasm *wasmParts // the grant's wasm tools, if any
}

// prepare loads what the flags describe, once.
func (f *grantFlags) prepare(env *Env) (*sessionParts, error) {
	g, err := f.load(env)
	if err != nil {
		return nil, err
	}
	return f.prepareGrant(env, g)
}

// prepareGrant builds the session's parts over g, as the flags describe.
func (f *grantFlags) prepareGrant(env *Env, g *grant.Grant) (*sessionParts, error) {
	// Secrets are read when a call needs one (broker.SecretLoader), so a
	// grant's secret that is not set fails only the calls that carry it.
	sp, err := session.Prepare(f.config(env, g))
	if err != nil {
		return nil, err
	}
	p := &sessionParts{Parts: sp}
	if err := p.openWasm(); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// close closes the backend, waiting until every sandbox is gone: no
// command may exit while placeholders or cgroups of its sandboxes remain.
func (p *sessionParts) close() {
	_ = p.Parts.Close()
	p.closeWasm()
}

// options returns broker options for one session over p.
func (p *sessionParts) options() *broker.Options {
	o := p.Options()
	o.WasmCall = p.wasmCall()
	return o
}

// openSession opens a broker session for the flags, for one call of the
// tool toolName (no warm pool; the call's record is fsynced with the
// session's close). A call to a sandboxed built-in tool has its sandbox's
// init started while the session opens (see prestarter).
func openSession(env *Env, f *grantFlags, toolName string) (*oneSession, error) {
	p, err := f.prepare(env)
	if err != nil {
		return nil, err
	}
	if def, ok := tool.Lookup(toolName); ok && !def.Broker && p.Grant.ToolEnabled(toolName) {
		if ps, ok := p.Backend.(prestarter); ok {
			// The call's sandbox starts its init while the session opens.
			ps.Prestart(broker.ToolSpecFor(p.Grant, toolName))
		}
	}
	o := p.options()
	o.Pool = -1 // one call: warm sandboxes built ahead would go unused
	o.OneCall = true
	s, err := broker.Open(o)
	if err != nil {
		p.close()
		return nil, err
	}
	return &oneSession{Session: s, parts: p}, nil
}

// oneSession is a command's only session: closing it closes the backend.
type oneSession struct {
	*broker.Session
	parts *sessionParts
}

// Close closes the session, then the backend.
func (s *oneSession) Close() error {
	err := s.Session.Close()
	s.parts.close()
	return err
}

// warnScan tells the user on stderr, as what (the command), of each
// read-write tree of g the protected-path scan did not see whole
// (grant.ScanRisks): files past its bound are not checked for protected
// names or set-ID bits. It is a warning, not a refusal: node_modules
// trees are that large. It warns too of read-write trees the native
// sandbox cannot write as their owner (warnings).
func warnScan(env *Env, what string, f *grantFlags, g *grant.Grant) {
	for _, r := range f.warnings(g) {
		fmt.Fprintf(env.Stderr, "%s: warning: %s\n", what, r)
	}
}

// warnings are what warnScan shows: the grant's scan risks, then, when
// the calls run on the native backend, the read-write trees it writes as
// another user than their owner (foreignOwners).
func (f *grantFlags) warnings(g *grant.Grant) []string {
	out := g.ScanRisks()
	backend := f.backend
	if backend == "" {
		backend = g.Runner().Backend
	}
	if !f.unsandboxed && f.remote.fromGrant(g).endpoint == "" && (backend == "" || backend == grant.BackendLinux) {
		out = append(out, foreignOwners(g)...)
	}
	return out
}

// names reports whether one of paths (relative to cwd) is cwd itself.
func names(cwd string, paths []string) bool {
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		if filepath.Clean(p) == cwd {
			return true
		}
	}
	return false
}

// closeOnce returns a function that runs close the first time it is called
// and says on stderr (as cmd) when it fails: for airlock exec and call, the
// session's close writes its close record and makes the one fsync that
// also covers the call's record (broker.Options.OneCall), so a failure
// there is a record that may not be on disk. The call's status stands, as
// when a call's own record could not be written.
func closeOnce(env *Env, cmd string, close func() error) func() {
	return sync.OnceFunc(func() {
		if err := close(); err != nil {
			fmt.Fprintf(env.Stderr, "%s: closing the session: %v (the audit log may not hold this call's records)\n", cmd, err)
		}
	})
}
