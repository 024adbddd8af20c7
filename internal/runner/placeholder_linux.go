package runner

import (
	"errors"

	"golang.org/x/sys/unix"
)

// placeholderXattr is the mark of airlock's placeholders (grant.PlaceholderXattr;
// the runner does not import the grant).
const placeholderXattr = "user.airlock.placeholder"

// isPlaceholder reports whether path, not followed, carries the
// placeholder mark (tool.Env.IsPlaceholder).
var isPlaceholder = func(path string) bool {
	var b [8]byte
	_, err := unix.Lgetxattr(path, placeholderXattr, b[:])
	return err == nil || errors.Is(err, unix.ERANGE)
}
