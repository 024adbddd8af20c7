package cli

import (
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
)

// nativeBackend returns the Linux sandbox backend.
func nativeBackend() (sandbox.Backend, error) {
	return linux.New(nil)
}
