//go:build !unix

package wasm

import experimentalsys "github.com/tetratelabs/wazero/experimental/sys"

// nonBlock is O_NONBLOCK where there are FIFOs to open (fs_unix.go).
const nonBlock = 0

// platformFlag returns the open flags with no os package name: none here
// (O_DIRECTORY is checked after the open).
func platformFlag(experimentalsys.Oflag) int { return 0 }

// dirOnly returns p: there are no FIFOs in the file system here.
func dirOnly(p string) string { return p }
