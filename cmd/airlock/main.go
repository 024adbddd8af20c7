// Command airlock runs an AI agent's tool calls in fresh, locked-down sandboxes.
// See `airlock help`.
package main

import (
	"context"
	"os"

	"github.com/airlockhq/airlock/internal/cli"
	"github.com/airlockhq/airlock/internal/runner"
)

func main() {
	// The hidden modes come first: they run inside a sandbox and must not
	// start anything of the CLI.
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case runner.Mode:
			os.Exit(runner.Main(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
		case sandboxMode:
			os.Exit(sandboxMain())
		}
	}
	os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
