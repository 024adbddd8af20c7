// Package cli implements airlock's command line: one file per subcommand,
// registered explicitly in commands. Main is the only entry point; it reads
// flags, the environment and files, and hands plain values to the packages
// that do the work.
package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// Env is what a subcommand may touch of the outside world.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
}

// command is one subcommand.
type command struct {
	name    string
	summary string // one line for `airlock help`
	usage   string // the synopsis and details for `airlock help NAME`
	run     func(ctx context.Context, env *Env, args []string) int
}

// Exit statuses of the CLI itself (a wrapped command's status passes through).
const (
	exitOK      = 0
	exitFailure = 1 // the call was refused or could not run
	exitUsage   = 2 // bad flags or arguments
)

// commands returns every subcommand in the order `airlock help` lists them.
func commands() []*command {
	return []*command{
		execCommand(),
		runCommand(),
		callCommand(),
		mcpCommand(), serveCommand(),
		checkCommand(),
		toolsCommand(),
		logCommand(),
		doctorCommand(),
		versionCommand(),
		helpCommand(),
	}
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
	env := &Env{Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: os.Getenv}
	if len(args) == 0 {
		printHelp(env.Stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		printHelp(env.Stdout)
		return exitOK
	case "-version", "--version":
		name = "version"
	}
	c := lookup(name)
	if c == nil {
		fmt.Fprintf(env.Stderr, "airlock: unknown command %q; run 'airlock help' for the list\n", name)
		return exitUsage
	}
	return c.run(ctx, env, args[1:])
}

// newFlags returns a FlagSet for c that prints c's usage on error.
func newFlags(c *command, env *Env) *flag.FlagSet {
	fs := flag.NewFlagSet("airlock "+c.name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.Stderr, "usage: %s\n", strings.TrimSpace(c.usage))
		fmt.Fprintln(env.Stderr, "\nflags:")
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args into fs, returning a non-negative exit status when
// the command should stop (help asked for, or bad flags).
func parseFlags(fs *flag.FlagSet, args []string) int {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return exitOK
		}
		return exitUsage
	}
	return -1
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
