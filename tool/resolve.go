package tool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"
)

// openFlags are added to every open of a model-named file: a FIFO must not
// block the open and a terminal must not become the controlling one.
const openFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY

// A target is a model-given path placed beneath Env.Root. Every file tool
// touches the file system only through root, so neither ".." nor a symlink
// (even one swapped in mid-call) can lead outside it.
type target struct {
	root  *os.Root // Env.Root, opened; closed by close
	rel   string   // the path relative to Env.Root, without ".."; "." is the root itself
	shown string   // the absolute path as the caller sees it, for messages
	field string   // the argument the path came from, for refusals
	// dirOnly: the path as given ends in "/", "/." or "/..", so only a
	// directory can be it (the kernel's rule); rel has lost that ending.
	dirOnly bool
	call    string // Env.CallID, for the names of temporary files
	// noUnnamed: make temporary files by name, not unnamed (O_TMPFILE):
	// one could not be named here.
	noUnnamed bool
}

func (t target) close() { t.root.Close() }

// resolve places p, the value of argument field, beneath env.Root. A relative
// p starts at env.Cwd. The check is by path components, so Root "/tmp/ws" does
// not cover "/tmp/ws-evil". The error is a refusal the model may read.
func resolve(env Env, field, p string) (target, error) {
	root, full, err := placePath(env, field, p)
	if err != nil {
		return target{}, err
	}
	rel, err := filepath.Rel(root, full)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return target{}, fmt.Errorf("field %q: %q lies outside the allowed root %q", field, p, root)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return target{}, fmt.Errorf("field %q: cannot open the root %q: %v", field, root, errnoText(err))
	}
	t := target{root: r, rel: rel, shown: filepath.Join(root, rel), field: field, call: env.CallID}
	if err := t.checkDirs(env, root, full, p); err != nil {
		r.Close()
		return target{}, err
	}
	return t, nil
}

// checkDirs holds t to the kernel's rule that lexical cleaning drops: a name
// followed by ".", ".." or a trailing slash must be a directory. So "f.txt/.",
// "f.txt/", "f.txt/.." and "f.txt/../g" fail as open(2) would (ENOTDIR)
// instead of reaching f.txt or g. p is the path as given and full its cleaned
// absolute form. A missing name fails as open(2) would (ENOENT), except the
// last, which only sets t.dirOnly: a tool that wants a directory reports it
// missing, and write_file must not create it as a file.
func (t *target) checkDirs(env Env, root, full, p string) error {
	sep := string(filepath.Separator)
	names := strings.Split(p, sep)
	last := len(names) - 1
	for last >= 0 && names[last] == "" {
		last--
	}
	if last < 0 {
		return nil // only separators: the file-system root
	}
	t.dirOnly = last < len(names)-1 || names[last] == "." || names[last] == ".."
	if !t.dirOnly && !slices.ContainsFunc(names, func(n string) bool { return n == "." || n == ".." }) {
		return nil // nothing that cleaning drops
	}
	cur := env.Cwd
	if cur == "" {
		cur = root
	}
	if filepath.IsAbs(p) {
		cur = filepath.VolumeName(p) + sep
	}
	for i, name := range names {
		cur = filepath.Join(cur, name)
		if name == "" || name == "." || name == ".." {
			continue
		}
		next := ""
		if k := slices.IndexFunc(names[i+1:], func(n string) bool { return n != "" }); k >= 0 {
			next = names[i+1+k]
		} else if i == len(names)-1 {
			continue // the last name, no slash after it: the tool's own open checks it
		}
		if next != "" && next != "." && next != ".." {
			continue // a name follows: opening the cleaned path checks this one
		}
		rel, err := filepath.Rel(root, cur)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+sep) {
			continue // above the root: only a directory the root lies in can be there
		}
		fi, err := t.root.Stat(rel)
		switch {
		case errors.Is(err, fs.ErrNotExist) && cur == full:
			// The target itself is missing: the tool says so (t.dirOnly is set).
		case err != nil:
			return t.describe(err)
		case !fi.IsDir():
			return fmt.Errorf("field %q: not a directory: %s is %s, and the path %q goes on after it with %q", t.field, cur, kindOf(fi.Mode()), p, "/"+next)
		}
	}
	return nil
}

// placePath cleans env.Root and joins p to env.Cwd lexically.
func placePath(env Env, field, p string) (root, full string, err error) {
	if p == "" {
		return "", "", fmt.Errorf("field %q: must not be empty", field)
	}
	if !utf8.ValidString(p) {
		return "", "", fmt.Errorf("field %q: %q is not valid UTF-8", field, p)
	}
	root = env.Root
	if root == "" {
		root = string(filepath.Separator)
	}
	root = filepath.Clean(root)
	if !filepath.IsAbs(root) {
		return "", "", fmt.Errorf("field %q: the allowed root %q is not absolute", field, root)
	}
	cwd := env.Cwd
	if cwd == "" {
		cwd = root
	}
	if filepath.IsAbs(p) {
		return root, filepath.Clean(p), nil
	}
	return root, filepath.Join(cwd, p), nil
}

// describe turns a file-system error on t into a refusal naming the field
// and path. It never includes file contents: only the kind of failure.
func (t target) describe(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("field %q: no such file or directory: %s", t.field, t.shown)
	case isEscape(err):
		return fmt.Errorf("field %q: %s leads outside the allowed root (through a symlink or \"..\")", t.field, t.shown)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("field %q: permission denied: %s", t.field, t.shown)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("field %q: a component of %s is not a directory", t.field, t.shown)
	case errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("field %q: too many levels of symlinks: %s", t.field, t.shown)
	case errors.Is(err, syscall.ENXIO):
		return fmt.Errorf("field %q: %s is a FIFO or device with no other end", t.field, t.shown)
	}
	return fmt.Errorf("field %q: %s: %s", t.field, t.shown, errnoText(err))
}

// isEscape reports whether err is os.Root's refusal of a path that leaves it.
// os does not export the error, so its text is matched.
func isEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

// errnoText is the innermost message of err without the path or operation,
// so a refusal never repeats more than the failure's kind.
func errnoText(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		err = u
	}
}

// kindOf names a non-regular file mode for a refusal.
func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	case m.IsRegular():
		return "a regular file"
	}
	return "not a regular file"
}

// openRegular opens t with access mode (os.O_RDONLY or os.O_RDWR) and refuses
// anything but a regular file, checked after the open so check and use agree.
func (t target) openRegular(mode int) (*os.File, fs.FileInfo, error) {
	f, err := t.root.OpenFile(t.rel, mode|openFlags, 0)
	if err != nil {
		return nil, nil, t.openError(err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, t.describe(err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("field %q: %s is %s, not a regular file", t.field, t.shown, kindOf(fi.Mode()))
	}
	return f, fi, nil
}

// checkPath refuses an empty path or one holding a NUL byte, at parse time.
func checkPath(field, p string, optional bool) error {
	if p == "" && !optional {
		return fmt.Errorf("field %q: must not be empty", field)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return fmt.Errorf("field %q: must not contain a NUL byte, got %q", field, p)
	}
	return nil
}

// openError describes a failed open of t, naming what t is when it is not a
// regular file (a socket or a FIFO without a peer fails to open at all).
func (t target) openError(err error) error {
	if errors.Is(err, syscall.EISDIR) {
		return fmt.Errorf("field %q: %s is a directory, not a file", t.field, t.shown)
	}
	if fi, serr := t.root.Stat(t.rel); serr == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("field %q: %s is %s, not a regular file", t.field, t.shown, kindOf(fi.Mode()))
	}
	return t.describe(err)
}
