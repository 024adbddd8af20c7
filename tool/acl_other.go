//go:build !linux

package tool

import (
	"io/fs"
	"os"
)

// keepACL does nothing where airlock reads no POSIX ACLs.
func (target) keepACL(*os.File, string, fs.FileInfo) error { return nil }
