package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

func helpCommand() *command {
	return &command{
		name:    "help",
		summary: "show the commands, or one command in detail",
		usage:   "airlock help [COMMAND]",
		run: func(ctx context.Context, env *Env, args []string) int {
			switch len(args) {
			case 0:
				printHelp(env.Stdout)
				return exitOK
			case 1:
				name := args[0]
				switch name {
				case "-h", "-help", "--help":
					name = "help"
				}
				c := lookup(name)
				if c == nil {
					fmt.Fprintf(env.Stderr, "airlock help: unknown command %q%s; run 'airlock help' for the list\n", name, didYouMean(name))
					return exitUsage
				}
				fmt.Fprintf(env.Stdout, "airlock %s: %s\n\nusage: %s\n", c.name, c.summary, strings.TrimSpace(c.usage))
				if c.name != "help" {
					// The flags section, from the command's own FlagSet.
					c.run(ctx, &Env{Stdin: env.Stdin, Stdout: env.Stdout, Stderr: env.Stderr, Getenv: env.Getenv, flagsOnly: true}, []string{"-h"})
				}
				return exitOK
			}
			fmt.Fprintln(env.Stderr, "airlock help: one command at most; usage: airlock help [COMMAND]")
			return exitUsage
		},
	}
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "airlock runs an AI agent's tool calls in fresh, locked-down sandboxes.")
	fmt.Fprintln(w, "\nusage: airlock COMMAND [flags] [args]\n\ncommands:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range commands() {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nRun 'airlock help COMMAND' for one command in detail.")
}
