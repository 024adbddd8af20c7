//go:build unix

package wasm

import (
	"strings"
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

// dirOnly returns the directory path p with "/." after it, which the
// kernel resolves only when p is a directory (or a symlink to one): an
// open of it fails with ENOTDIR on anything else, a FIFO included, and
// never opens that.
func dirOnly(p string) string { return strings.TrimRight(p, "/") + "/." }
