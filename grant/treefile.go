package grant

import (
	"errors"
	"io"
)

// The broker reads files that a sandbox may have written or planted: a
// repository's configuration in a read-write tree, what it includes, a
// .git file, a home directory's start-up files. Such a file may be a fifo
// (a plain open blocks until a writer comes, which never does), a device,
// or far larger than any configuration, so each is opened with
// openTreeFile, which opens nothing but a regular file, and read with a
// bound.

// errNotRegular is returned for a path that is not a regular file.
var errNotRegular = errors.New("not a regular file")

// readTreeFile reads up to n bytes of the regular file p (following a
// symlink only where follow says so), and reports whether that was the
// whole file.
func readTreeFile(p string, follow bool, n int64) (data []byte, whole bool, err error) {
	f, err := openTreeFile(p, follow)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	data, err = io.ReadAll(io.LimitReader(f, n+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(data)) > n {
		return data[:n], false, nil
	}
	return data, true, nil
}
