package main

import (
	"github.com/airlockhq/airlock/internal/runner"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
	"github.com/airlockhq/airlock/internal/sandbox/linux/inside"
)

// sandboxMode is the hidden mode the Linux backend starts as PID 1 of a new
// sandbox; it builds the sandbox and then runs the runner or a command.
const sandboxMode = initproto.Arg

func sandboxMain() int { return inside.Main(runner.Run) }
