package mcpserver_test

import (
	"os"

	"github.com/airlockhq/airlock/internal/runner"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
	"github.com/airlockhq/airlock/internal/sandbox/linux/inside"
)

// sandboxMode runs the native backend's init, with the runner as its tool.
func sandboxMode(arg string) (int, bool) {
	if arg == initproto.Arg {
		return inside.Main(runner.Run), true
	}
	return 0, false
}

func newNative() (sandbox.Backend, error) {
	return linux.New(&linux.Options{Executable: os.Args[0], Cgroups: linux.CgroupsOptional})
}
