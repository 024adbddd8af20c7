//go:build !linux

package grant

import (
	"os"
)

// openTreeFile opens the regular file p for reading, following a symlink
// at p only where follow says so; anything else is errNotRegular. (Only
// Linux sandboxes can leave a fifo in a tree; here the file is looked at,
// opened, and kept only if it is the one looked at.)
func openTreeFile(p string, follow bool) (*os.File, error) {
	stat := os.Lstat
	if follow {
		stat = os.Stat
	}
	fi, err := stat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &os.PathError{Op: "open", Path: p, Err: errNotRegular}
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	if again, err := f.Stat(); err != nil || !os.SameFile(fi, again) {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: p, Err: errNotRegular}
	}
	return f, nil
}
