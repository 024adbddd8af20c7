package airlock

import (
	"github.com/airlockhq/airlock/internal/runner"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
	"github.com/airlockhq/airlock/internal/sandbox/linux/inside"
)

func nativeBackend(stateDir string) (sandbox.Backend, error) {
	return linux.New(&linux.Options{StateDir: stateDir})
}

const sandboxMode = initproto.Arg

func sandboxMain() int { return inside.Main(runner.Run) }
