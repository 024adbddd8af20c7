package tool

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/airlockhq/airlock/internal/writetmp"
)

// How write_file and edit_file replace a file
//
// The new content goes to a temporary file created in the file's own
// directory (through t.root like every other open), is fsynced, and is
// renamed over the file: a full disk, a quota or a kill mid-write leaves
// either the old file or the new one, never a mix, and no temporary file
// after a failure. The replacement keeps the old file's permission bits,
// owner, group, access ACL and user attributes (else the file is written
// in place, below); it is a new inode, so hard links to the old file keep
// the old content.
//
// On Linux the temporary file has no name while it is written (O_TMPFILE),
// so a call killed mid-write (a time limit, a cancel, the broker's death)
// leaves nothing: the kernel frees the inode. A new file is then linked
// straight to its name (linkat, which never replaces: a file made there
// meanwhile is replaced by rename as before); a file that is there gets the
// temporary name only for the two system calls before the rename. Where
// the file system has no O_TMPFILE (NFS, FUSE), or the file cannot be
// linked (no /proc), it is made by name (O_EXCL, so never through a
// symlink). Either way the name (writetmp.Name) carries the call's tag, and
// the broker journals the directory before the call runs, so a later start
// of airlock (or the broker, once a killed call's sandbox is gone) removes
// what a killed call left (writetmp.Sweep).
//
// Where a rename cannot replace the file (the file is a bind mount, as a
// grant of a single file makes it inside a sandbox, or its directory does
// not let a new file be made there), or the new file cannot keep the old
// one's owner, group, access ACL or user attributes (errNotKept), the
// content is written in place, after reserving its space (fallocate) so a
// full disk still fails before any byte changes.
//
// A symlinked leaf is followed (within the root, as os.Root follows it for
// reads): the file the link names is replaced and the link stays a link.
//
// An edit (edit_file) replaces the content it read only if the file is
// still that content: just before the replacement lands (the rename, the
// link, or the in-place write) the name must still be the file read and
// the file must still hold, byte for byte, what was read (readBase.check).
// Its mode and owner must be as they were too, since the replacement is
// given those; and so must a file write_file replaces. Otherwise the call
// fails (errChanged) and the other writer's content or mode stays: a
// background command appending to the file, an editor saving it in place
// or by rename, a chmod 600, while the edit was computed. What no check
// can see is a change in the few system calls between the check and the
// rename (or during an in-place write): file systems offer no
// compare-and-swap of a file's content.

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

// errChanged, errChangedWrite: the file an edit read, or the file a write
// replaces, changed before the replacement landed.
var (
	errChanged      = errors.New("it changed while being edited")
	errChangedWrite = errors.New("it changed while being written")
)

// A readBase is the file a replacement is for, as it was: for an edit, the
// file, open, its Stat when opened (before the read) and the bytes read;
// for a write, only its Lstat when looked up (f nil).
type readBase struct {
	f       *os.File
	fi      fs.FileInfo
	content []byte
}

// check fails (errChanged, or errChangedWrite for a write) unless rel (in
// root) is still the file, with the mode and owner it had, and, for an
// edit, the file still holds what was read. The replacement was given
// that mode and owner: a chmod 600 since would be undone by it. A nil
// readBase checks nothing.
func (rb *readBase) check(root *os.Root, rel string) error {
	if rb == nil {
		return nil
	}
	changed := errChanged
	if rb.f == nil {
		changed = errChangedWrite
	}
	fi, err := root.Lstat(rel)
	if err != nil || !os.SameFile(fi, rb.fi) || fi.Mode() != rb.fi.Mode() || !sameOwner(fi, rb.fi) {
		return changed
	}
	if rb.f == nil {
		return nil
	}
	if fi, err := rb.f.Stat(); err != nil || fi.Size() != int64(len(rb.content)) {
		return changed
	}
	buf := make([]byte, min(len(rb.content)+1, 64<<10))
	for off := 0; ; {
		n, err := rb.f.ReadAt(buf, int64(off))
		if n > len(rb.content)-off || string(buf[:n]) != string(rb.content[off:off+n]) {
			return changed
		}
		off += n
		if err != nil {
			if !errors.Is(err, io.EOF) || off != len(rb.content) {
				return changed
			}
			return nil
		}
	}
}

// A writeError is a failed replacement, said so the model knows the file's state.
type writeError struct {
	shown   string // the path as the caller sees it
	err     error  // the failure
	existed bool   // there was a file before
	partial bool   // an in-place write failed after changing bytes
	changed bool   // another writer changed the file (errChanged)
	leftTmp string // a temporary file that could not be removed, if any
}

func (e *writeError) Error() string {
	state := "no file was created"
	switch {
	case e.changed:
		state = "the file was left as the other writer made it"
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
// system lets it, and, where base is not nil, only while the file is still
// as base saw it (see the comment at the top of this file).
func (t target) replace(lf leaf, b []byte, base *readBase) error {
	werr := &writeError{shown: t.shown, existed: lf.fi != nil}
	dir, name := filepath.Dir(lf.rel), filepath.Base(lf.rel)
	tmp, err := t.createTemp(dir, name, lf.fi)
	if err != nil {
		if lf.fi != nil && (inPlaceWill(err) || errors.Is(err, errNotKept)) {
			return t.writeInPlace(lf, b, werr, base)
		}
		werr.err = err
		return werr
	}
	defer tmp.close()
	fail := func(err error) error {
		werr.err = err
		werr.changed = errors.Is(err, errChanged) || errors.Is(err, errChangedWrite)
		if rerr := tmp.remove(t.root); rerr != nil {
			werr.leftTmp = filepath.Join(filepath.Dir(t.shown), filepath.Base(tmp.rel))
		}
		return werr
	}
	if _, err := tmp.f.Write(b); err != nil {
		return fail(err)
	}
	if err := tmp.f.Sync(); err != nil {
		return fail(err)
	}
	if beforeCommitHook != nil {
		beforeCommitHook()
	}
	if err := base.check(t.root, lf.rel); err != nil {
		return fail(err)
	}
	if tmp.rel == "" {
		// Unnamed: a new file gets its name at once (linkat never
		// replaces one, so a file made meanwhile is replaced by rename, as
		// before); a file that is there gets a temporary name only now,
		// for the rename over it.
		if lf.fi == nil {
			err := linkUnnamed(tmp.f, tmp.dir, name)
			if err == nil {
				tmp.f.Close()
				syncDir(tmp.dir)
				return nil
			}
			if !errors.Is(err, fs.ErrExist) {
				return t.replaceFallback(tmp, err, lf, b, base, fail)
			}
		}
		if err := tmp.name(t.call, dir, name); err != nil {
			return t.replaceFallback(tmp, err, lf, b, base, fail)
		}
	}
	if err := tmp.f.Close(); err != nil {
		return fail(err)
	}
	if err := t.root.Rename(tmp.rel, lf.rel); err != nil {
		if lf.fi != nil && (errors.Is(err, syscall.EBUSY) || errors.Is(err, syscall.EXDEV)) {
			if rerr := t.root.Remove(tmp.rel); rerr != nil {
				return fail(rerr)
			}
			tmp.rel = ""
			return t.writeInPlace(lf, b, werr, base)
		}
		return fail(err)
	}
	tmp.rel = "" // renamed: nothing of it is left to remove
	if tmp.dir != nil {
		syncDir(tmp.dir)
	} else if d, err := t.root.Open(dir); err == nil {
		syncDir(d)
		d.Close()
	}
	return nil
}

// replaceFallback handles a failure to name an unnamed temporary file: a
// sandbox without /proc, say, cannot link one, and the content is then
// written again under a temporary name; any other failure (a full disk,
// a quota) is the write's.
func (t target) replaceFallback(tmp *tempFile, err error, lf leaf, b []byte, base *readBase, fail func(error) error) error {
	if !errors.Is(err, errNoLink) {
		return fail(err)
	}
	tmp.close()
	t.noUnnamed = true
	return t.replace(lf, b, base)
}

// beforeCommitHook, when set (by tests), runs just before a replacement
// lands: another writer's change there must not be undone.
var beforeCommitHook func()

// syncDir makes a rename or link in d durable: best effort.
func syncDir(d *os.File) { _ = d.Sync() }

// tryUnnamed: temporary files are made unnamed where the file system
// lets them; tests turn it off to exercise the named ones.
var tryUnnamed = true

// A tempFile is the file a replacement writes the new content to.
type tempFile struct {
	f   *os.File
	rel string   // its name relative to the root; "" while it has none (O_TMPFILE)
	dir *os.File // its directory, for an unnamed one; nil otherwise
}

// name gives an unnamed temporary file in dir, for base, a temporary name.
func (tmp *tempFile) name(call, dir, base string) error {
	tag := writetmp.Tag(call)
	for range 10 {
		name := writetmp.Name(base, tag)
		err := linkUnnamed(tmp.f, tmp.dir, name)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		tmp.rel = filepath.Join(dir, name)
		return nil
	}
	return fmt.Errorf("could not name a temporary file: %w", fs.ErrExist)
}

// remove removes the temporary file's name, if it has one.
func (tmp *tempFile) remove(root *os.Root) error {
	tmp.close()
	if tmp.rel == "" {
		return nil
	}
	if err := root.Remove(tmp.rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	tmp.rel = ""
	return nil
}

// close closes the file and its directory; an unnamed file goes with it.
// Closing twice does no harm.
func (tmp *tempFile) close() {
	tmp.f.Close()
	if tmp.dir != nil {
		tmp.dir.Close()
	}
}

// createTemp makes a new, empty file beside base in dir, with old's
// permission bits, owner, group, access ACL and user attributes
// (keepOwner, keepAttrs; errNotKept where it cannot), or 0644 less the
// umask for a new file. Where the file system lets it, the file has no name
// (openUnnamed); else it is made under a temporary name (writetmp.Name).
func (t target) createTemp(dir, base string, old fs.FileInfo) (*tempFile, error) {
	perm := fs.FileMode(0o644)
	if old != nil {
		perm = 0o600 // until fchmod below: no wider than the file it replaces
	}
	keep := func(f *os.File) error {
		if old == nil {
			return nil
		}
		if !keepOwner(f, old) {
			return errNotKept
		}
		if err := f.Chmod(old.Mode().Perm()); err != nil {
			return err
		}
		return t.keepAttrs(f, filepath.Join(dir, base), old)
	}
	if tryUnnamed && !t.noUnnamed {
		if d, err := t.root.Open(dir); err == nil {
			f, err := openUnnamed(d, base, perm)
			if err == nil {
				if err := keep(f); err != nil {
					f.Close()
					d.Close()
					return nil, err
				}
				return &tempFile{f: f, dir: d}, nil
			}
			d.Close()
		}
	}
	tag := writetmp.Tag(t.call)
	for range 10 {
		rel := filepath.Join(dir, writetmp.Name(base, tag))
		f, err := t.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL|openFlags, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := keep(f); err != nil {
			f.Close()
			t.root.Remove(rel)
			return nil, err
		}
		return &tempFile{f: f, rel: rel}, nil
	}
	return nil, fmt.Errorf("could not create a temporary file in %s: %w", filepath.Dir(t.shown), fs.ErrExist)
}

// errNotKept: a new file here cannot carry the old one's owner, group,
// access ACL or user attributes (one outside the sandbox's user namespace,
// say), so a replacement would hand the old permission bits to someone
// else (a file only its group could read, readable by the caller's group
// or a setgid directory's) or lose what the user set. The file is written
// in place instead, keeping all of them.
var errNotKept = errors.New("the file's owner, group, ACL or attributes cannot be given to a new file here")

// inPlaceWill reports whether a failure to create the temporary file means
// the file may still be written in place: its directory does not let a new
// file be made (read-only, or not writable, as for a granted single file).
func inPlaceWill(err error) bool {
	return errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)
}

// writeInPlace writes b over the file at lf, reserving the space first,
// for an edit only while the file is still what base read.
func (t target) writeInPlace(lf leaf, b []byte, werr *writeError, base *readBase) error {
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
	if beforeCommitHook != nil {
		beforeCommitHook()
	}
	if err := base.check(t.root, lf.rel); err != nil {
		werr.err, werr.changed = err, true
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
