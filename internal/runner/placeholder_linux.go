package runner

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/wire"
)

// isPlaceholder reports whether path, not followed, carries the
// placeholder mark (tool.Env.IsPlaceholder).
var isPlaceholder = func(path string) bool {
	var b [8]byte
	_, err := unix.Lgetxattr(path, wire.PlaceholderXattr, b[:])
	return err == nil || errors.Is(err, unix.ERANGE)
}
