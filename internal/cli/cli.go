// Package cli implements airlock's command line: one file per subcommand,
// registered explicitly in commands. Main is the only entry point; it reads
// flags, the environment and files, and hands plain values to the packages
// that do the work.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Env is what a subcommand may touch of the outside world.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// flagsOnly makes -h print only the flags section (for airlock help).
	flagsOnly bool
}

// command is one subcommand.
type command struct {
	name    string
	summary string // one line for `airlock help`
	usage   string // the synopsis and details for `airlock help NAME`
	run     func(ctx context.Context, env *Env, args []string) int
	// flagHints explain flags the command does not have but a user may
	// expect (exec's --unsandboxed), by name.
	flagHints map[string]string
	// sessions marks a command that holds broker sessions while it writes
	// its standard output or error (mcp's answers, serve's and
	// tool-server's logs, a capsule's output): Main has a write there
	// whose reader went away fail with EPIPE (survivePipes) instead of
	// Go's default SIGPIPE, which killed the process before its sessions
	// could stop their sandboxes and background work and write their end
	// and close records.
	sessions bool
}

// Exit statuses of the CLI itself (a wrapped command's status passes through).
const (
	exitOK      = 0
	exitFailure = 1 // the call was refused or could not run
	exitUsage   = 2 // bad flags or arguments
)

// stopSignals end airlock call and tool-server in order (mcp, serve and
// run name the same three): the calls in flight are cancelled or finish,
// the session writes its close record, and the egress proxy's socket
// directory and the sandboxes' cgroups are removed. SIGHUP is one of
// them, since it is what a closing terminal or a hanging-up supervisor
// sends: left to Go, it killed airlock at once, which left the session
// without its close record and the proxy's directory in /dev/shm for good.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// commands returns every subcommand in the order `airlock help` lists them.
func commands() []*command {
	return []*command{
		execCommand(),
		runCommand(),
		callCommand(),
		mcpCommand(), serveCommand(),
		toolServerCommand(),
		checkCommand(),
		toolsCommand(),
		logCommand(),
		doctorCommand(),
		versionCommand(),
		helpCommand(),
	}
}

// didYouMean returns " (did you mean "exec"?)" for a misspelt command
// name, or "".
func didYouMean(name string) string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	if s := suggest(name, names); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

func lookup(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return c
		}
	}
	return nil
}

// Main runs the airlock command line with args (without the program name)
// and returns the process exit status.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	out := &outWriter{w: stdout}
	env := &Env{Stdin: stdin, Stdout: out, Stderr: stderr, Getenv: os.Getenv}
	if len(args) == 0 {
		printHelp(env.Stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		printHelp(env.Stdout)
		return out.status("airlock", env, exitOK)
	case "-version", "--version":
		name = "version"
	}
	c := lookup(name)
	if c == nil {
		fmt.Fprintf(env.Stderr, "airlock: unknown command %q%s; run 'airlock help' for the list\n", name, didYouMean(name))
		return exitUsage
	}
	if c.sessions {
		defer survivePipes()()
	}
	code := c.run(ctx, env, args[1:])
	if c.name == "exec" {
		return out.execStatus(env, code)
	}
	return out.status("airlock "+c.name, env, code)
}

// survivePipes makes a write to a pipe whose reader went away fail with
// EPIPE, for standard output and error too, until the returned func is
// called. SIGPIPE is notified, not ignored: an ignored signal would be
// inherited by the processes airlock starts.
func survivePipes() (stop func()) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGPIPE)
	return func() { signal.Stop(c) }
}

// outWriter is a command's standard output, remembering the first write
// that failed: a command that could not write what it printed (a full
// disk under `airlock call ... > result`, /dev/full) must not exit 0 as if
// its output were whole.
type outWriter struct {
	w   io.Writer
	mu  sync.Mutex
	err error
}

// Unwrap returns the writer written to, so that sandbox.Abandonable can
// tell one whose writes never wait (a file) from one that may.
func (o *outWriter) Unwrap() io.Writer { return o.w }

func (o *outWriter) Write(p []byte) (int, error) {
	n, err := o.w.Write(p)
	if err != nil {
		o.mu.Lock()
		if o.err == nil {
			o.err = err
		}
		o.mu.Unlock()
	}
	return n, err
}

func (o *outWriter) failed() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// status returns code, or exitFailure after saying so on stderr (as who)
// when a write to standard output failed.
func (o *outWriter) status(who string, env *Env, code int) int {
	err := o.failed()
	if err == nil {
		return code
	}
	fmt.Fprintf(env.Stderr, "%s: writing standard output: %v\n", who, err)
	if code == exitOK {
		return exitFailure
	}
	return code
}

// execStatus is status for airlock exec, whose standard output is the
// command's: a failed write ends the relay and the command meets a broken
// pipe (sandbox.CopyCapped), so its status stands, except a 0 from a
// command that had written everything before the relay failed: that
// output was lost, as `echo hi >/dev/full` run directly says with its 1,
// so airlock says so and exits 125, its own failure. A reader that went
// away (EPIPE) is the command's to meet, as it would without airlock.
func (o *outWriter) execStatus(env *Env, code int) int {
	err := o.failed()
	if err == nil || errors.Is(err, syscall.EPIPE) || code != exitOK {
		return code
	}
	fmt.Fprintf(env.Stderr, "airlock exec: writing standard output: %v (the command's output was lost)\n", err)
	return exitExecFailure
}

// newFlags returns a FlagSet for c. It prints nothing itself: parseFlags
// reports a bad flag in one line, and prints c's help for -h.
func newFlags(c *command, env *Env) *flag.FlagSet {
	fs := flag.NewFlagSet("airlock "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args into fs, returning a non-negative exit status when
// the command should stop: help asked for (c's usage and flags on stdout,
// status 0), or a bad flag (one line on stderr naming it, with a suggestion
// for a misspelt one, status 2).
func parseFlags(c *command, env *Env, fs *flag.FlagSet, args []string) int {
	err := fs.Parse(args)
	if err == nil {
		// A negative duration is bad input for every duration flag (a
		// limit, a timeout, an interval); taken as given it acted as the
		// default, or as no time at all.
		var neg *flag.Flag
		fs.Visit(func(f *flag.Flag) {
			if g, ok := f.Value.(flag.Getter); ok && neg == nil {
				if d, ok := g.Get().(time.Duration); ok && d < 0 {
					neg = f
				}
			}
		})
		if neg != nil {
			return usageError(env, c, "--%s %s: a duration cannot be negative (e.g. 30s, 10m)", neg.Name, neg.Value)
		}
		return -1
	}
	if errors.Is(err, flag.ErrHelp) {
		if !env.flagsOnly {
			fmt.Fprintf(env.Stdout, "usage: %s\n", strings.TrimSpace(c.usage))
		}
		printFlags(env.Stdout, fs)
		return exitOK
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		name = strings.TrimLeft(name, "-")
		name, _, _ = strings.Cut(name, "=")
		msg = "unknown flag --" + name
		if h, ok := c.flagHints[name]; ok {
			msg += ": " + h
		} else if s := suggest(name, names); s != "" {
			msg += " (did you mean --" + s + "?)"
		}
	}
	return usageError(env, c, "%s", msg)
}

// usageError reports bad usage of c in one line, pointing at its help, and
// returns the usage exit status.
func usageError(env *Env, c *command, format string, args ...any) int {
	fmt.Fprintf(env.Stderr, "airlock %s: %s; see 'airlock help %s'\n", c.name, fmt.Sprintf(format, args...), c.name)
	return exitUsage
}

// printFlags prints the flags section of fs, or nothing when it has none.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprintln(w, "\nflags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// suggest returns the candidate closest to s when it is close enough to be
// a misspelling of it (an edit or two, a swapped pair counting as one), or "".
func suggest(s string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		d := editDistance(s, c)
		if d < bestD && d <= (len(c)+1)/2 {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and transpositions of neighbours.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
