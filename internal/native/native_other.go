//go:build !linux

package native

import (
	"fmt"
	"runtime"

	"github.com/airlockhq/airlock/internal/sandbox"
)

func newBackend(*Options) (sandbox.Backend, error) {
	return nil, fmt.Errorf("the native sandbox needs Linux, not %s (run unsandboxed only if you accept no isolation): %w", runtime.GOOS, sandbox.ErrUnsupported)
}
