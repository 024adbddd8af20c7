package tool

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// How write_file and edit_file replace a file
//
// The new content goes to a temporary file created in the file's own
// directory (O_EXCL, so never through a symlink, and through t.root like
// every other open), is fsynced, and is renamed over the file: a full disk,
// a quota or a kill mid-write leaves either the old file or the new one,
// never a mix, and no temporary file after a failure. The replacement keeps
// the old file's permission bits and, where the caller may, its owner; it
// is a new inode, so hard links to the old file keep the old content.
//
// Where a rename cannot replace the file (the file is a bind mount, as a
// grant of a single file makes it inside a sandbox, or its directory does
// not let a new file be made there) the content is written in place, after
// reserving its space (fallocate) so a full disk still fails before any
// byte changes.
//
// A symlinked leaf is followed (within the root, as os.Root follows it for
// reads): the file the link names is replaced and the link stays a link.

// maxLeafLinks is how many symlinks resolveLeaf follows, as os.Root does.
const maxLeafLinks = 8

// errEscape is recognised by isEscape, like os.Root's own refusal.
var errEscape = errors.New("path escapes from parent")

// A leaf is the file a write replaces: t.rel with every symlink resolved.
type leaf struct {
	rel string      // relative to t.root; no component is a symlink (when resolved)
	fi  fs.FileInfo // Lstat of rel; nil when no file is there yet
}

// resolveLeaf follows t.rel's symlinks, in its directories and its last
// name, to the path of the file itself, refusing any that leave the root
// or are absolute (as os.Root does). A missing last name is not an error:
// the write creates it there.
func (t target) resolveLeaf() (leaf, error) {
	pending := strings.Split(filepath.ToSlash(t.rel), "/")
	var done []string
	links := 0
	for len(pending) > 0 {
		name := pending[0]
		pending = pending[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return leaf{}, &fs.PathError{Op: "resolve", Path: t.rel, Err: errEscape}
			}
			done = done[:len(done)-1]
			continue
		}
		rel := filepath.Join(append(done, name)...)
		fi, err := t.root.Lstat(rel)
		switch {
		case errors.Is(err, fs.ErrNotExist) && len(pending) == 0:
			return leaf{rel: rel}, nil
		case err != nil:
			return leaf{}, err
		case fi.Mode()&fs.ModeSymlink != 0:
			if links++; links > maxLeafLinks {
				return leaf{}, &fs.PathError{Op: "resolve", Path: t.rel, Err: syscall.ELOOP}
			}
			dest, err := t.root.Readlink(rel)
			if err != nil {
				return leaf{}, err
			}
			if filepath.IsAbs(dest) {
				return leaf{}, &fs.PathError{Op: "resolve", Path: t.rel, Err: errEscape}
			}
			pending = append(strings.Split(filepath.ToSlash(dest), "/"), pending...)
		case len(pending) > 0 && !fi.IsDir():
			return leaf{}, &fs.PathError{Op: "resolve", Path: t.rel, Err: syscall.ENOTDIR}
		case len(pending) == 0:
			return leaf{rel: rel, fi: fi}, nil
		default:
			done = append(done, name)
		}
	}
	return leaf{}, fmt.Errorf("field %q: %s is a directory, not a file", t.field, t.shown)
}

// A writeError is a failed replacement, said so the model knows the file's state.
type writeError struct {
	shown   string // the path as the caller sees it
	err     error  // the failure
	existed bool   // there was a file before
	partial bool   // an in-place write failed after changing bytes
	leftTmp string // a temporary file that could not be removed, if any
}

func (e *writeError) Error() string {
	state := "no file was created"
	switch {
	case e.partial:
		state = "the file may now hold part of the new content"
	case e.existed:
		state = "the file was left unchanged"
	}
	s := fmt.Sprintf("could not write %s: %s; %s", e.shown, errnoText(e.err), state)
	if e.leftTmp != "" {
		s += fmt.Sprintf(" (the temporary file %s could not be removed)", e.leftTmp)
	}
	return s
}

func (e *writeError) Unwrap() error { return e.err }

// replace gives the file at lf the content b, atomically where the file
// system lets it (see the comment at the top of this file).
func (t target) replace(lf leaf, b []byte) error {
	werr := &writeError{shown: t.shown, existed: lf.fi != nil}
	dir := filepath.Dir(lf.rel)
	tmp, tmpRel, err := t.createTemp(dir, filepath.Base(lf.rel), lf.fi)
	if err != nil {
		if lf.fi != nil && inPlaceWill(err) {
			return t.writeInPlace(lf, b, werr)
		}
		werr.err = err
		return werr
	}
	fail := func(err error) error {
		tmp.Close()
		werr.err = err
		if rerr := t.root.Remove(tmpRel); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			werr.leftTmp = filepath.Join(filepath.Dir(t.shown), filepath.Base(tmpRel))
		}
		return werr
	}
	if _, err := tmp.Write(b); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := t.root.Rename(tmpRel, lf.rel); err != nil {
		if lf.fi != nil && (errors.Is(err, syscall.EBUSY) || errors.Is(err, syscall.EXDEV)) {
			if rerr := t.root.Remove(tmpRel); rerr != nil {
				return fail(rerr)
			}
			return t.writeInPlace(lf, b, werr)
		}
		return fail(err)
	}
	if d, err := t.root.Open(dir); err == nil { // the rename itself, durable: best effort
		d.Sync()
		d.Close()
	}
	return nil
}

// createTemp makes a new, empty file beside base in dir, with old's
// permission bits and owner (where the caller may) or 0644 less the umask
// for a new file.
func (t target) createTemp(dir, base string, old fs.FileInfo) (*os.File, string, error) {
	perm := fs.FileMode(0o644)
	if old != nil {
		perm = 0o600 // until fchmod below: no wider than the file it replaces
	}
	if len(base) > 64 {
		base = base[:64]
	}
	for range 10 {
		rel := filepath.Join(dir, fmt.Sprintf(".%s.airlock-%016x.tmp", base, rand.Uint64()))
		f, err := t.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL|openFlags, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		if old != nil {
			keepOwner(f, old)
			if err := f.Chmod(old.Mode().Perm()); err != nil {
				f.Close()
				t.root.Remove(rel)
				return nil, "", err
			}
		}
		return f, rel, nil
	}
	return nil, "", fmt.Errorf("could not create a temporary file in %s: %w", filepath.Dir(t.shown), fs.ErrExist)
}

// inPlaceWill reports whether a failure to create the temporary file means
// the file may still be written in place: its directory does not let a new
// file be made (read-only, or not writable, as for a granted single file).
func inPlaceWill(err error) bool {
	return errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)
}

// writeInPlace writes b over the file at lf, reserving the space first.
func (t target) writeInPlace(lf leaf, b []byte, werr *writeError) error {
	f, err := t.root.OpenFile(lf.rel, os.O_WRONLY|openFlags, 0)
	if err != nil {
		werr.err = err
		return werr
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !os.SameFile(fi, lf.fi) {
		werr.err = errors.New("the file was replaced while being written")
		return werr
	}
	if err := preallocate(f, int64(len(b))); err != nil {
		werr.err = err
		return werr
	}
	if n, err := f.WriteAt(b, 0); err != nil {
		werr.err, werr.partial = err, n > 0
		return werr
	}
	if err := f.Truncate(int64(len(b))); err != nil {
		werr.err, werr.partial = err, true
		return werr
	}
	if err := f.Sync(); err != nil {
		werr.err, werr.partial = err, true
		return werr
	}
	if err := f.Close(); err != nil {
		werr.err, werr.partial = err, true
		return werr
	}
	return nil
}
