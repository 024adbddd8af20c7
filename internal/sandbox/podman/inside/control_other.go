//go:build !unix

package inside

import "syscall"

// control has no pipe to read where there are no containers.
func control(int) <-chan syscall.Signal { return nil }
