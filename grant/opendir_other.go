//go:build !linux

package grant

import "os"

// openDir opens the directory p for listing.
func openDir(p string) (*os.File, error) { return os.Open(p) }
