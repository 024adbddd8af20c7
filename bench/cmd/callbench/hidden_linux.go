package main

import (
	"os"

	"github.com/airlockhq/airlock/internal/runner"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
	"github.com/airlockhq/airlock/internal/sandbox/linux/inside"
)

// hiddenMode runs the sandbox init or the runner when the native backend
// started this binary as one, and reports whether it did.
func hiddenMode() (int, bool) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case runner.Mode:
			return runner.Main(os.Args[2:], os.Stdin, os.Stdout, os.Stderr), true
		case initproto.Arg:
			return inside.Main(runner.Run), true
		}
	}
	return 0, false
}
