// Command airlock runs an AI agent's tool calls in fresh, locked-down sandboxes.
// See `airlock help`.
package main

import (
	"context"
	"os"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/internal/cli"
)

func main() {
	// The hidden modes come first: started as a sandbox's init or as the
	// runner, the process plays that role and exits here.
	airlock.Init()
	os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
