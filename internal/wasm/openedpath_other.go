//go:build !linux

package wasm

import "os"

// canLocate says openedPath cannot say where an open file is here.
const canLocate = false

// openedPath cannot say where an open file is on this platform; the checks
// before the open stand alone.
func openedPath(*os.File) (string, bool) { return "", false }
