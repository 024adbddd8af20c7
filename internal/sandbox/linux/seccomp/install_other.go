//go:build !linux

package seccomp

import (
	"errors"
	"fmt"
	"runtime"
)

// Install fails everywhere but Linux: seccomp is a Linux feature.
func Install(opts Options) error {
	return fmt.Errorf("installing a seccomp filter on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
