//go:build !linux

package wasm

import (
	"io/fs"
	"os"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// openForWrite is Linux's race-free open for writing; elsewhere the caller
// opens the ordinary way.
func (f *rootFS) openForWrite(string, int, fs.FileMode) (*os.File, experimentalsys.Errno, bool) {
	return nil, 0, false
}

// The entry operations below are Linux's race-free ones; elsewhere the
// caller works through the root by name.
func (f *rootFS) mkdirAt(string, fs.FileMode) (experimentalsys.Errno, bool) { return 0, false }
func (f *rootFS) removeAt(string, bool) (experimentalsys.Errno, bool)       { return 0, false }
func (f *rootFS) symlinkAt(string, string) (experimentalsys.Errno, bool)    { return 0, false }
func (f *rootFS) renameAt(string, string) (experimentalsys.Errno, bool)     { return 0, false }
func (f *rootFS) linkAt(string, string) (experimentalsys.Errno, bool)       { return 0, false }
