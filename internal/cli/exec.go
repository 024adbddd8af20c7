package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/sandbox"
)

func execCommand() *command {
	c := &command{
		name:    "exec",
		summary: "run any command in a fresh sandbox (cwd read-write, no network unless granted)",
		usage: `airlock exec [flags] -- CMD [ARGS...]

Runs CMD in a fresh sandbox. By default the current directory is read-write,
system directories are read-only, nothing else of the host is visible, and
there is no network. stdin, stdout and stderr pass through, a terminal passes
through when stdin is one (as a new pseudo-terminal, never the host's own),
and airlock exits with CMD's exit status (128+N when a signal N killed it).
SIGTERM, SIGHUP and SIGINT sent to airlock are passed on to CMD (SIGTERM to
every process of the sandbox), so its traps run; a second one kills the
sandbox at once (status 137).

With --allow-host (or a grant that names hosts) the sandbox reaches those
hosts, and only those, through airlock's egress proxy: HTTP_PROXY,
HTTPS_PROXY and ALL_PROXY point at it, so curl, git, pip, npm and Go
programs work; anything that ignores them has no route out, and names
resolve only through the proxy. Refused connections are reported on stderr.

Examples:
  airlock exec -- make test
  airlock exec --ro ~/.cache --time 10m --memory 2GiB -- go test ./...
  airlock exec --env CI=1 -- sh -c 'env; ls -la /'
  airlock exec --allow-host pypi.org --allow-host files.pythonhosted.org -- pip download requests`,
	}
	c.run = func(ctx context.Context, env *Env, args []string) int {
		fs := newFlags(c, env)
		var gf grantFlags
		gf.register(fs)
		wall := fs.Duration("time", 0, "wall-time limit (e.g. 30s, 10m); default: the grant's")
		memory := fs.String("memory", "", "memory limit (e.g. 512MiB, 2GiB); default: the grant's")
		pids := fs.Int("pids", 0, "process limit; default: the grant's")
		var envs multiFlag
		fs.Var(&envs, "env", "set `K=V` in the sandbox (repeatable)")
		if code := parseFlags(fs, args); code >= 0 {
			return code
		}
		cmdArgs := fs.Args()
		if len(cmdArgs) == 0 {
			fmt.Fprintln(env.Stderr, "airlock exec: no command; usage: airlock exec [flags] -- CMD [ARGS...]")
			return exitUsage
		}
		if gf.unsandboxed {
			fmt.Fprintln(env.Stderr, "airlock exec: --unsandboxed is for tool calls; exec always sandboxes (run the command directly instead)")
			return exitUsage
		}
		g, err := gf.load(env)
		if err != nil {
			fmt.Fprintf(env.Stderr, "airlock exec: %v\n", err)
			return exitFailure
		}
		lim := g.LimitsFor("shell")
		if *wall > 0 {
			lim.Time = *wall
		}
		if *memory != "" {
			n, err := grant.ParseSize(*memory)
			if err != nil || n <= 0 {
				fmt.Fprintf(env.Stderr, "airlock exec: --memory %q is not a size (e.g. 512MiB)\n", *memory)
				return exitUsage
			}
			lim.Memory = n
		}
		if *pids < 0 {
			fmt.Fprintf(env.Stderr, "airlock exec: --pids %d: must be positive\n", *pids)
			return exitUsage
		} else if *pids > 0 {
			lim.Processes = *pids
		}
		spec := broker.SpecFor(g, lim)
		spec.Command = cmdArgs
		// A wrapped command's output is the user's, not a model's: no cap
		// beyond a generous one that protects the terminal's host.
		spec.Limits.OutputBytes = 1 << 40
		for _, kv := range envs {
			k, _, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				fmt.Fprintf(env.Stderr, "airlock exec: --env %q: want K=V\n", kv)
				return exitUsage
			}
			spec.Env = setEnv(spec.Env, kv)
		}
		spec.Stdin, spec.Stdout, spec.Stderr = env.Stdin, env.Stdout, env.Stderr
		if g.HasNetwork() {
			stopEgress, err := broker.AttachEgress(ctx, g, spec, &broker.EgressOptions{
				Sandbox:    "exec",
				OnDecision: reportEgress(env),
			})
			if err != nil {
				fmt.Fprintf(env.Stderr, "airlock exec: %v\n", err)
				return exitFailure
			}
			defer stopEgress()
		}
		records, _ := recordsDir(env, gf.records) // none: no placeholder journal
		backend, err := chooseBackend(gf.backend, gf.image, g, records)
		if err != nil {
			fmt.Fprintf(env.Stderr, "airlock exec: %v\n", err)
			return exitFailure
		}
		if c, ok := backend.(io.Closer); ok {
			defer c.Close()
		}
		ran := make(chan struct{})
		spec.Signal = forwardSignals(env, cmdArgs[0], ran)
		restore, ctx, err := attachTerminal(ctx, env, spec)
		if err != nil {
			close(ran)
			fmt.Fprintf(env.Stderr, "airlock exec: %v\n", err)
			return exitFailure
		}
		res, err := backend.Run(ctx, spec)
		close(ran)
		restore()
		if err != nil {
			var mf *sandbox.MissingFeatureError
			if errors.As(err, &mf) {
				fmt.Fprintf(env.Stderr, "airlock exec: refusing to run without isolation: %v\n", err)
			} else {
				fmt.Fprintf(env.Stderr, "airlock exec: %v\n", err)
			}
			return 125
		}
		for _, hit := range res.LimitsHit {
			ended := hit == res.Limit
			switch {
			case hit == sandbox.LimitTime:
				fmt.Fprintf(env.Stderr, "airlock exec: %s ran past its time limit (%s) and was killed\n", cmdArgs[0], lim.Time.Round(time.Millisecond))
			case hit == sandbox.LimitMemory && ended:
				fmt.Fprintf(env.Stderr, "airlock exec: %s ran out of memory (limit %s) and was killed\n", cmdArgs[0], grant.FormatSize(lim.Memory))
			case hit == sandbox.LimitMemory:
				fmt.Fprintf(env.Stderr, "airlock exec: %s hit its memory limit (%s): a process was killed\n", cmdArgs[0], grant.FormatSize(lim.Memory))
			case hit == sandbox.LimitProcesses:
				fmt.Fprintf(env.Stderr, "airlock exec: %s hit its process limit (%d): a fork was refused\n", cmdArgs[0], lim.Processes)
			case hit == sandbox.LimitOutput:
				fmt.Fprintf(env.Stderr, "airlock exec: %s passed the output limit and was killed\n", cmdArgs[0])
			}
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

// forwardSignals passes SIGTERM, SIGHUP and SIGINT sent to airlock on to
// the command (see sandbox.Spec.Signal), so its traps run and airlock exits
// with its status. A second signal, for a command that ignores or outlives
// the first, kills the sandbox at once (status 128+9). A signal that comes
// while the sandbox is being built reaches the command as it starts. It
// stops when done is closed.
func forwardSignals(env *Env, name string, done <-chan struct{}) <-chan syscall.Signal {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
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
			if n > 0 {
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

// describeLimits names limits with their values: "the memory limit (1GiB)
// and the process limit (256)".
func describeLimits(names []string, lim grant.Limits) string {
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
		default:
			parts = append(parts, "the "+n+" limit")
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

// setEnv sets kv ("K=V") in list, replacing an existing K.
func setEnv(list []string, kv string) []string {
	k, _, _ := strings.Cut(kv, "=")
	for i, e := range list {
		if strings.HasPrefix(e, k+"=") {
			list[i] = kv
			return list
		}
	}
	return append(list, kv)
}
