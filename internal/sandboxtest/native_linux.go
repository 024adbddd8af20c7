package sandboxtest

import (
	"os"

	"github.com/airlockhq/airlock/internal/runner"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
	"github.com/airlockhq/airlock/internal/sandbox/linux/inside"
)

const sandboxMode = initproto.Arg

func sandboxMain() int { return inside.Main(runner.Run) }

func newNative() (sandbox.Backend, error) {
	policy := linux.CgroupsDefault
	if os.Geteuid() != 0 {
		policy = linux.CgroupsOptional
	}
	return linux.New(&linux.Options{Executable: os.Args[0], Cgroups: policy})
}
