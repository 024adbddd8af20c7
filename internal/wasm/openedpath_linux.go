package wasm

import (
	"os"
	"strconv"
	"strings"
)

// canLocate says openedPath can always say where an open file is, so a
// file it cannot place is refused.
const canLocate = true

// openedPath returns the path of the open file, from /proc/self/fd.
func openedPath(f *os.File) (string, bool) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil || !strings.HasPrefix(p, "/") || strings.HasSuffix(p, " (deleted)") {
		return "", false
	}
	return p, true
}
