//go:build !linux

package direct

import "os"

// unread cannot tell here: drain closes the pipes at once.
func unread(*os.File) (int, bool) { return 0, false }
