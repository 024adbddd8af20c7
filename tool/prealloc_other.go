//go:build !linux

package tool

import "os"

// preallocate does nothing where fallocate(2) is not available.
func preallocate(*os.File, int64) error { return nil }
