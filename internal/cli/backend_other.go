//go:build !linux

package cli

import (
	"fmt"
	"runtime"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// nativeBackend reports that this platform has no native sandbox.
func nativeBackend(string) (sandbox.Backend, error) {
	return nil, fmt.Errorf("airlock's sandbox needs Linux (this is %s); run calls with --unsandboxed only if you accept no isolation: %w", runtime.GOOS, sandbox.ErrUnsupported)
}
