//go:build !unix

package tool

import (
	"context"
	"runtime"
	"time"

	"github.com/airlockhq/airlock/wire"
)

// runCommand is unsupported off Unix: there is no /bin/sh or process group.
func runCommand(ctx context.Context, command, dir string, timeout time.Duration, maxOut int, starter func(func() error) error) wire.ToolOutput {
	return Failure("field %q: the shell tool is not supported on %s", "command", runtime.GOOS)
}
