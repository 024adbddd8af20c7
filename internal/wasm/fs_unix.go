//go:build unix

package wasm

import (
	"syscall"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// platformFlag returns the open flags with no os package name.
func platformFlag(oflag experimentalsys.Oflag) int {
	var flag int
	if oflag&experimentalsys.O_DIRECTORY != 0 {
		flag |= syscall.O_DIRECTORY
	}
	if oflag&experimentalsys.O_NOFOLLOW != 0 {
		flag |= syscall.O_NOFOLLOW
	}
	if oflag&experimentalsys.O_NONBLOCK != 0 {
		flag |= syscall.O_NONBLOCK
	}
	return flag
}
