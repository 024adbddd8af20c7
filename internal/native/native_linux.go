package native

import (
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
)

func newBackend(o *Options) (sandbox.Backend, error) {
	lo := &linux.Options{StateDir: o.StateDir, Executable: o.Executable}
	if o.OptionalCgroups {
		lo.Cgroups = linux.CgroupsOptional
	}
	b, err := linux.New(lo)
	if err != nil {
		return nil, err
	}
	return b, nil
}
