//go:build !linux

package tool

import (
	"io/fs"
	"os"
)

// keepAttrs does nothing where airlock reads no POSIX ACLs or extended
// attributes.
func (target) keepAttrs(*os.File, string, fs.FileInfo) error { return nil }
