package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/session"
	"github.com/airlockhq/airlock/wire"
)

func execCommand() *command {
	c := &command{
		name:    "exec",
		summary: "run any command in a fresh sandbox (cwd read-write, no network unless granted)",
		usage: `airlock exec [flags] -- CMD [ARGS...]

Runs CMD in a fresh sandbox. By default the current directory is read-write,
system directories are read-only, nothing else of the host is visible, and
there is no network. stdin, stdout and stderr pass through, a terminal passes
through when stdin and stdout are one (as a new pseudo-terminal, never the
host's own; output sent to a file or a pipe arrives byte for byte),
and airlock exits with CMD's exit status (128+N when a signal N killed it,
127 when CMD is not found, 126 when it cannot run), or 125 when airlock
itself fails before or instead of running CMD (bad usage, a grant that does
not load, a sandbox that cannot be built).
SIGTERM, SIGHUP and SIGINT sent to airlock are passed on to CMD (SIGTERM to
every process of the sandbox), so its traps run; a second one, or SIGQUIT,
kills the sandbox at once (status 137), and a terminal is restored. Output
that a reader which does not read has not taken by then is dropped.

With --allow-host (or a grant that names hosts) the sandbox reaches those
hosts, and only those, through airlock's egress proxy: HTTP_PROXY,
HTTPS_PROXY and ALL_PROXY point at it, so curl, git, pip, npm and Go
programs work; anything that ignores them has no route out, and names
resolve only through the proxy. Refused connections are reported on stderr.

The environment is built, not inherited: a fixed PATH, HOME and TMPDIR
/tmp, USER and LOGNAME airlock, SHELL=/bin/sh, LANG and LC_ALL C.UTF-8,
TERM (the host's with a terminal, else dumb), AIRLOCK_SANDBOX=1, and
GIT_CONFIG_* naming git's excludes file for airlock's placeholders. Entries of the host's PATH that the sandbox can see (under /usr, /bin,
/sbin, /lib*, or a granted path) are added after the fixed PATH, so tools
such as /usr/local/go/bin/go are found; when the host's Go module cache
(GOMODCACHE, $GOPATH/pkg/mod or ~/go/pkg/mod) is granted, GOMODCACHE names
it. --inherit-env NAME passes one host variable, --env K=V sets one.

Each run is a call in the audit log (airlock log), like every tool call:
the command, the names of the variables it was given (never their values),
the sandbox that ran it and its exit status or the limit that ended it.

Examples:
  airlock exec -- make test
  airlock exec --ro "$(go env GOMODCACHE)" --time 10m --memory 2GiB -- go test ./...
  airlock exec --env CI=1 -- sh -c 'env; ls -la /'
  airlock exec --allow-host pypi.org --allow-host files.pythonhosted.org -- pip download requests`,
		flagHints: map[string]string{"unsandboxed": "exec always sandboxes (run the command directly instead)"},
	}
	c.run = func(ctx context.Context, env *Env, args []string) int {
		fs := newFlags(c, env)
		gf := grantFlags{sandboxOnly: true}
		gf.register(fs)
		wall := fs.Duration("time", 0, "wall-time limit (e.g. 30s, 10m); default: the grant's")
		memory := fs.String("memory", "", "memory limit (e.g. 512MiB, 2GiB); default: the grant's")
		pids := fs.Int("pids", 0, "process limit; default: the grant's")
		var envs, inherit multiFlag
		fs.Var(&envs, "env", "set `K=V` in the sandbox (repeatable)")
		fs.Var(&inherit, "inherit-env", "pass the host's variable `NAME` into the sandbox (repeatable)")
		if code := parseFlags(c, env, fs, args); code >= 0 {
			if code != exitOK {
				// A bad flag: airlock's own failure, not the command's.
				code = exitExecFailure
			}
			return code
		}
		cmdArgs := fs.Args()
		if len(cmdArgs) == 0 {
			fmt.Fprintln(env.Stderr, "airlock exec: no command; usage: airlock exec [flags] -- CMD [ARGS...]")
			return exitExecFailure
		}
		g, err := gf.load(env)
		if err != nil {
			fmt.Fprintf(env.Stderr, "airlock exec: %v\n", err)
			return exitExecFailure
		}
		warnScan(env, "airlock exec", &gf, g)
		lim := g.LimitsFor("shell")
		if *wall > 0 {
			lim.Time = *wall
		}
		if *memory != "" {
			n, err := grant.ParseSize(*memory)
			if err != nil || n <= 0 {
				fmt.Fprintf(env.Stderr, "airlock exec: --memory %q is not a size (e.g. 512MiB)\n", *memory)
				return exitExecFailure
			}
			lim.Memory = n
		}
		if *pids < 0 {
			fmt.Fprintf(env.Stderr, "airlock exec: --pids %d: must be positive\n", *pids)
			return exitExecFailure
		} else if *pids > 0 {
			lim.Processes = *pids
		}
		// A wrapped command's output is the user's, not a model's: no cap
		// beyond a generous one that protects the terminal's host.
		lim.Output = 1 << 40
		cmdEnv := hostTools(append([]string(nil), broker.BaseEnv...), g, env.Getenv)
		for _, name := range inherit {
			if name == "" || strings.Contains(name, "=") {
				fmt.Fprintf(env.Stderr, "airlock exec: --inherit-env %q: want a variable's name\n", name)
				return exitExecFailure
			}
			v := env.Getenv(name)
			if v == "" {
				fmt.Fprintf(env.Stderr, "airlock exec: --inherit-env %s: the variable is not set here (or empty; --env %s= sets an empty one)\n", name, name)
				return exitExecFailure
			}
			cmdEnv = broker.SetEnv(cmdEnv, name+"="+v)
		}
		for _, kv := range envs {
			k, _, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				// Not echoed: without its NAME= it may be the value alone.
				fmt.Fprintf(env.Stderr, "airlock exec: --env wants NAME=VALUE; an argument of %d bytes has no NAME= (not shown: it may be a secret)\n", len(kv))
				return exitExecFailure
			}
			cmdEnv = broker.SetEnv(cmdEnv, kv)
		}
		// Signals are taken over before the session opens: enabling each is
		// a round trip to the Go runtime's signal thread, which would wait
		// for a core behind the sandbox's init starting (Prestart).
		// A write to a reader that went away (airlock exec -- yes | head
		// -1) fails with EPIPE instead of killing airlock with SIGPIPE
		// (Go's default for standard output and error): the command meets
		// the broken pipe itself (sandbox.CopyCapped), and airlock records
		// the call, restores a terminal and exits with its status.
		brokenPipe := make(chan os.Signal, 1)
		signal.Notify(brokenPipe, syscall.SIGPIPE)
		defer signal.Stop(brokenPipe)
		ran := make(chan struct{})
		signals := forwardSignals(env, cmdArgs[0], ran)
		endSignals := sync.OnceFunc(func() { close(ran) })
		defer endSignals()
		s, closeExec, err := openExecSession(env, &gf, g, envs, inherit, lim)
		if err != nil {
			fmt.Fprintf(env.Stderr, "airlock exec: %v\n", err)
			return exitExecFailure
		}
		closeSession := closeOnce(env, "airlock exec", closeExec)
		defer closeSession()
		var attachErr error
		res, err := s.Exec(ctx, &broker.Exec{
			Command: cmdArgs, Env: cmdEnv, Limits: lim,
			Stdin: env.Stdin, Stdout: env.Stdout, Stderr: env.Stderr,
			Signal:   signals,
			OnEgress: reportEgress(env),
			Attach: func(ctx context.Context, spec *sandbox.Spec) (context.Context, func(), error) {
				restore, err := attachTerminal(env, spec)
				attachErr = err
				return ctx, restore, err
			},
		})
		endSignals()
		// The session closes before anything is printed: its close record
		// and the command's share one fsync (broker.Options.OneCall), which
		// a slow reader of stderr must not hold back.
		closeSession()
		switch {
		case attachErr != nil:
			fmt.Fprintf(env.Stderr, "airlock exec: %v\n", attachErr)
			return exitExecFailure
		case err != nil && res != nil && errors.Is(err, broker.ErrAudit):
			// The command ran: its status stands, the lost record is said.
			fmt.Fprintf(env.Stderr, "airlock exec: %v\n", err)
		case err != nil:
			var mf *sandbox.MissingFeatureError
			if errors.As(err, &mf) {
				fmt.Fprintf(env.Stderr, "airlock exec: refusing to run without isolation: %v\n", err)
			} else {
				fmt.Fprintf(env.Stderr, "airlock exec: %v\n", err)
			}
			return exitExecFailure
		}
		for _, line := range limitSentences(cmdArgs[0], res.LimitsHit, res.Limit, res.Signal != 0, lim) {
			fmt.Fprintf(env.Stderr, "airlock exec: %s\n", line)
		}
		if u := res.Isolation.Unenforced; len(u) > 0 {
			fmt.Fprintf(env.Stderr, "airlock exec: NOT ENFORCED: %s (allowed by --allow-unenforced-limits or the grant's limits.unenforced; see airlock doctor)\n", describeLimits(u, lim))
		}
		if res.Signal != 0 {
			return 128 + res.Signal
		}
		return res.ExitCode
	}
	return c
}

// exitExecFailure is airlock exec's status when airlock itself fails: bad
// usage, a grant that does not load or refuses a path, a sandbox that
// cannot be built. Like env's, timeout's, podman's and docker run's, it is
// not a status a command commonly returns, so a script can tell airlock's
// failure from the command's (grep's 1 for "no match", its 2 for an error).
const exitExecFailure = 125

// openExecSession opens the one broker session of airlock exec over g, and
// returns it with what closes it and its backend. A command carries no
// secret, so beside remote hands no local sandbox is built, and the hands
// get no environment from the broker.
func openExecSession(env *Env, gf *grantFlags, g *grant.Grant, envs, inherit []string, lim grant.Limits) (*broker.Session, func() error, error) {
	cfg := gf.config(env, g)
	if cfg.Remote != nil {
		switch {
		case len(envs) > 0:
			return nil, nil, errors.New("--env with --remote: the hands get no environment from the broker")
		case len(inherit) > 0:
			return nil, nil, errors.New("--inherit-env with --remote: the hands get no environment from the broker")
		}
		cfg.NoLocal = true
	}
	p, err := session.Prepare(cfg)
	if err != nil {
		return nil, nil, err
	}
	if ps, ok := p.Backend.(prestarter); ok && !execTerminal(env) {
		// The command's sandbox starts its init while the session opens.
		ps.Prestart(broker.SpecFor(g, lim))
	}
	o := p.Options()
	o.Pool = -1 // one command: warm sandboxes built ahead would go unused
	o.OneCall = true
	s, err := broker.Open(o)
	if err != nil {
		_ = p.Close()
		return nil, nil, err
	}
	return s, func() error {
		err := s.Close()
		_ = p.Close()
		return err
	}, nil
}

// prestarter is a backend that can start the init of its next sandbox
// while the caller prepares the call (the Linux backend).
type prestarter interface {
	Prestart(spec *sandbox.Spec)
}

// forwardSignals passes SIGTERM, SIGHUP and SIGINT sent to airlock on to
// the command (see sandbox.Spec.Signal), so its traps run and airlock exits
// with its status. A second signal, for a command that ignores or outlives
// the first, kills the sandbox at once (status 128+9), as SIGQUIT does. A signal that comes
// while the sandbox is being built reaches the command as it starts. It
// stops when done is closed.
func forwardSignals(env *Env, name string, done <-chan struct{}) <-chan syscall.Signal {
	sigs := make(chan os.Signal, 4)
	// SIGQUIT too: left to Go it kills airlock with a stack dump, which
	// leaves the caller's terminal raw. The sandbox passes on no SIGQUIT,
	// so it kills the sandbox at once, and airlock restores the terminal.
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT)
	fwd := make(chan syscall.Signal, 2)
	go func() {
		defer signal.Stop(sigs)
		for n := 0; ; n++ {
			var s os.Signal
			select {
			case s = <-sigs:
			case <-done:
				return
			}
			sig, _ := s.(syscall.Signal)
			switch {
			case sig == syscall.SIGQUIT:
				fmt.Fprintf(env.Stderr, "airlock exec: %v: killing %s\n", s, name)
				sig = syscall.SIGKILL
			case n > 0:
				fmt.Fprintf(env.Stderr, "airlock exec: second signal (%v): killing %s\n", s, name)
				sig = syscall.SIGKILL
			}
			select {
			case fwd <- sig:
			case <-done:
				return
			}
		}
	}()
	return fwd
}

// limitSentences says, one sentence each, which limits what (a command or
// a tool) hit, with their values: "sleep ran past its time limit (1s) and
// was killed". ended is the limit that ended it, if any; killed says what
// itself died of a signal. A memory or process limit that "ended" a
// command which then exited on its own status did not kill it: the
// memory limit killed one of its processes, the process limit refused a
// fork (it never kills). exec and call print the same sentences.
func limitSentences(what string, hits []wire.Limit, ended wire.Limit, killed bool, lim grant.Limits) []string {
	var out []string
	for _, hit := range hits {
		switch {
		case hit == sandbox.LimitTime:
			out = append(out, fmt.Sprintf("%s ran past its time limit (%s) and was killed", what, lim.Time.Round(time.Millisecond)))
		case hit == sandbox.LimitMemory && hit == ended && killed:
			out = append(out, fmt.Sprintf("%s ran out of memory (limit %s) and was killed", what, grant.FormatSize(lim.Memory)))
		case hit == sandbox.LimitMemory:
			out = append(out, fmt.Sprintf("%s hit its memory limit (%s): a process was killed", what, grant.FormatSize(lim.Memory)))
		case hit == sandbox.LimitProcesses:
			out = append(out, fmt.Sprintf("%s hit its process limit (%d): a fork was refused", what, lim.Processes))
		case hit == sandbox.LimitOutput:
			out = append(out, fmt.Sprintf("%s passed the output limit (%s) and was killed", what, grant.FormatSize(lim.Output)))
		case hit == sandbox.LimitDisk:
			out = append(out, fmt.Sprintf("%s was killed: it drove the disk it writes to below the free space airlock keeps (see airlock doctor)", what))
		default:
			out = append(out, fmt.Sprintf("%s hit %s", what, describeLimits([]wire.Limit{hit}, lim)))
		}
	}
	return out
}

// describeLimits names limits with their values: "the memory limit (1GiB)
// and the process limit (256)".
func describeLimits(names []wire.Limit, lim grant.Limits) string {
	var parts []string
	for _, n := range names {
		switch n {
		case sandbox.LimitMemory:
			parts = append(parts, fmt.Sprintf("the memory limit (%s)", grant.FormatSize(lim.Memory)))
		case sandbox.LimitProcesses:
			parts = append(parts, fmt.Sprintf("the process limit (%d)", lim.Processes))
		case sandbox.LimitTime:
			parts = append(parts, fmt.Sprintf("the time limit (%s)", lim.Time))
		case sandbox.LimitFileSize:
			parts = append(parts, fmt.Sprintf("the file size limit (%s)", grant.FormatSize(lim.FileSize)))
		case sandbox.LimitTmp:
			parts = append(parts, fmt.Sprintf("the /tmp size limit (%s)", grant.FormatSize(lim.Tmp)))
		case sandbox.LimitDisk:
			parts = append(parts, "the disk's free-space floor")
		default:
			parts = append(parts, "the "+string(n)+" limit")
		}
	}
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// reportEgress tells the user on stderr about each connection the egress
// proxy refused, so a failing command says why.
func reportEgress(env *Env) func(egress.Decision) {
	var mu sync.Mutex
	return func(d egress.Decision) {
		if d.Allowed {
			return
		}
		what := "a connection"
		if d.Host != "" {
			what = net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(env.Stderr, "airlock exec: egress refused %s: %s\n", what, d.Reason)
	}
}

// systemDirs are the host directories every sandbox sees read-only (the
// Linux backend's list, internal/sandbox/linux/inside).
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// visible reports whether the sandbox of g sees dir: a system directory
// or a granted path.
func visible(g *grant.Grant, dir string) bool {
	if !filepath.IsAbs(dir) {
		return false
	}
	dir = filepath.Clean(dir)
	for _, s := range systemDirs {
		if dir == s || strings.HasPrefix(dir, s+"/") {
			return true
		}
	}
	return g.CheckPath(dir, false).Allowed
}

// hostTools lets a wrapped command find the host's tools the sandbox can
// see, nothing more: each entry of the host's PATH that is visible in the
// sandbox (a system directory such as /usr/local/go/bin, or a granted path)
// is added after the sandbox's own PATH, and when the host's Go module cache
// is granted GOMODCACHE names it (the sandbox's HOME is /tmp, where Go would
// look for another). Nothing else of the host's environment passes
// (--inherit-env and --env add more).
func hostTools(list []string, g *grant.Grant, getenv func(string) string) []string {
	var path string
	for _, kv := range list {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	have := map[string]bool{}
	for _, d := range filepath.SplitList(path) {
		have[d] = true
	}
	for _, d := range filepath.SplitList(getenv("PATH")) {
		if d != "" && !have[d] && visible(g, d) {
			path += string(filepath.ListSeparator) + d
			have[d] = true
		}
	}
	list = broker.SetEnv(list, "PATH="+path)
	if mc := goModCache(getenv); mc != "" && visible(g, mc) {
		list = broker.SetEnv(list, "GOMODCACHE="+mc)
	}
	return list
}

// goModCache is where the host's Go keeps modules, as go env GOMODCACHE
// says without running go: $GOMODCACHE, else the first $GOPATH's pkg/mod,
// else ~/go/pkg/mod.
func goModCache(getenv func(string) string) string {
	if v := getenv("GOMODCACHE"); v != "" {
		return v
	}
	if gp := filepath.SplitList(getenv("GOPATH")); len(gp) > 0 && gp[0] != "" {
		return filepath.Join(gp[0], "pkg", "mod")
	}
	if home := getenv("HOME"); home != "" {
		return filepath.Join(home, "go", "pkg", "mod")
	}
	return ""
}
