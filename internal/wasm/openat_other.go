//go:build !linux

package wasm

import (
	"io/fs"
	"os"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
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

// The metadata calls by descriptor are Linux's; elsewhere the caller works
// through the root by name.
func (f *rootFS) statAt(string, bool) (sys.Stat_t, experimentalsys.Errno, bool) {
	return sys.Stat_t{}, 0, false
}
func (f *rootFS) readlinkAt(string) (string, experimentalsys.Errno, bool)      { return "", 0, false }
func (f *rootFS) utimensAt(string, int64, int64) (experimentalsys.Errno, bool) { return 0, false }
func (r *rootFile) utimensHeld(int64, int64) (experimentalsys.Errno, bool)     { return 0, false }
