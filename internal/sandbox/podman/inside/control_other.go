//go:build !unix

package inside

import (
	"os"
	"syscall"
)

// control has no pipe to read where there are no containers.
func control(int) <-chan syscall.Signal { return nil }

// reportFile has no pipe to write where there are no containers.
func reportFile(int) *os.File { return nil }
