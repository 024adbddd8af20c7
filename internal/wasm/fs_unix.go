//go:build unix

package wasm

import (
	"syscall"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// nonBlock is in every open made for a module: an open of a FIFO would
// wait, in the broker's process and past the run's deadline, for a
// partner that need never come. What such an open finds is refused
// (kindErr); regular files and directories ignore the flag.
const nonBlock = syscall.O_NONBLOCK

// platformFlag returns the open flags with no os package name.
func platformFlag(oflag experimentalsys.Oflag) int {
	var flag int
	if oflag&experimentalsys.O_DIRECTORY != 0 {
		flag |= syscall.O_DIRECTORY
	}
	if oflag&experimentalsys.O_NOFOLLOW != 0 {
		flag |= syscall.O_NOFOLLOW
	}
	return flag
}
