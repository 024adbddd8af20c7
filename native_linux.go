package airlock

import (
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
)

func nativeBackend() (sandbox.Backend, error) { return linux.New(nil) }
