//go:build !linux

package airlock

import (
	"fmt"
	"runtime"

	"github.com/airlockhq/airlock/internal/sandbox"
)

func nativeBackend(string) (sandbox.Backend, error) {
	return nil, fmt.Errorf("the native sandbox needs Linux, not %s (Options.Unsandboxed runs without isolation): %w", runtime.GOOS, sandbox.ErrUnsupported)
}

// sandboxMode is never passed on platforms without a native sandbox.
const sandboxMode = "__sandbox"

func sandboxMain() int { return 69 }
