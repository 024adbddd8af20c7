package cli

import (
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
)

// nativeBackend returns the Linux sandbox backend, journalling its
// placeholders under stateDir (none when empty).
func nativeBackend(stateDir string) (sandbox.Backend, error) {
	return linux.New(&linux.Options{StateDir: stateDir})
}
