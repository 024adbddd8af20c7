package wasm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// errMoved is a granted directory that is no longer where the grant put it.
var errMoved = errors.New("is no longer the directory the grant resolved (a symlink or another directory is there now)")

// openDir opens the directory p, which the grant resolved when it was
// loaded (no symlink on it), as a root, refusing it when p now leads
// anywhere else: a component that became a symlink (a sandbox of the
// session can plant one in a writable tree: "mv work work.old; ln -s
// /outside work") or a directory swapped in. os.OpenRoot follows symlinks,
// so the directory it opened is checked afterwards to be the one p names
// with no symlink on the way: a swap before the open and back after it is
// caught too, since the directory opened is then another than the one at p.
// os.OpenRoot opens p without O_DIRECTORY, so a FIFO put in p's place would
// have it wait for a writer, in the broker, for ever; p is opened as a
// directory instead (dirOnly), and anything else fails at once.
func openDir(p string) (*os.Root, error) {
	r, err := os.OpenRoot(dirOnly(p))
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			pe.Path = p // not dirOnly's
		}
		return nil, err
	}
	if err := stillAt(r, p); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// stillAt checks that the root r is the directory at p, reached with no
// symlink on the way.
func stillAt(r *os.Root, p string) error {
	for cur := p; ; cur = filepath.Dir(cur) {
		fi, err := os.Lstat(cur)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s %w", p, errMoved)
		}
		if filepath.Dir(cur) == cur {
			break
		}
	}
	opened, err := r.Stat(".")
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	now, err := os.Lstat(p)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	if !now.IsDir() || !os.SameFile(opened, now) {
		return fmt.Errorf("%s %w", p, errMoved)
	}
	return nil
}
