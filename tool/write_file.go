package tool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/airlockhq/airlock/wire"
)

const writeFileDescription = `Writes content to a file, creating it (mode 0644) or replacing everything in it. Returns "wrote N bytes to PATH".
path is absolute or relative to the working directory; its parent directory must already exist (write_file does not create directories).
Limits: refuses a directory or any non-regular file, content larger than the file-size limit (64 MiB by default), and paths outside the allowed root, including through symlinks.`

// WriteFileArgs are write_file's arguments.
type WriteFileArgs struct {
	Path    string `json:"path" desc:"the file to write, absolute or relative to the working directory; its directory must exist"`
	Content string `json:"content" desc:"the complete new contents of the file"`
}

func (a *WriteFileArgs) validate() error { return checkPath("path", a.Path, false) }

// Access reports the one file written.
func (a WriteFileArgs) Access() Access {
	return Access{Paths: []PathAccess{{Path: a.Path, Write: true}}}
}

var writeFile = define("write_file", writeFileDescription, false, runWriteFile)

func runWriteFile(ctx context.Context, env Env, a WriteFileArgs) wire.ToolOutput {
	if n, limit := int64(len(a.Content)), fileCap(env); n > limit {
		return Failure("field %q: %d bytes is larger than the file-size limit of %d bytes", "content", n, limit)
	}
	t, err := resolve(env, "path", a.Path)
	if err != nil {
		return Failure("%v", err)
	}
	defer t.close()
	f, err := t.openForWrite()
	if err != nil {
		return Failure("%v", err)
	}
	if err := writeAll(f, []byte(a.Content)); err != nil {
		f.Close()
		return Failure("%v", t.describe(err))
	}
	if err := f.Close(); err != nil {
		return Failure("%v", t.describe(err))
	}
	return wire.ToolOutput{
		Content: fmt.Sprintf("wrote %d bytes to %s", len(a.Content), t.shown),
		Meta:    wire.Meta{Bytes: int64(len(a.Content))},
	}
}

// openForWrite opens t for writing, creating it with mode 0644 when absent.
// It does not truncate on open: a FIFO or device is opened without effect
// (non-blocking) and refused after fstat, before anything is written.
func (t target) openForWrite() (*os.File, error) {
	if t.rel == "." {
		return nil, fmt.Errorf("field %q: %s is a directory, not a file", t.field, t.shown)
	}
	if t.dirOnly {
		return nil, fmt.Errorf("field %q: the path ends in a slash, \".\" or \"..\", so it names a directory (%s), not a file", t.field, t.shown)
	}
	dir := filepath.Dir(t.rel)
	di, err := t.root.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("field %q: the parent directory %s does not exist (write_file does not create directories)", t.field, filepath.Dir(t.shown))
	case err != nil:
		return nil, t.describe(err)
	case !di.IsDir():
		return nil, fmt.Errorf("field %q: the parent %s is %s, not a directory", t.field, filepath.Dir(t.shown), kindOf(di.Mode()))
	}
	f, err := t.root.OpenFile(t.rel, os.O_WRONLY|os.O_CREATE|openFlags, 0o644)
	if err != nil {
		return nil, t.openError(err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, t.describe(err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("field %q: %s is %s, not a regular file", t.field, t.shown, kindOf(fi.Mode()))
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, t.describe(err)
	}
	return f, nil
}

// writeAll writes b from the start of f.
func writeAll(f *os.File, b []byte) error {
	if _, err := f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("writing: %w", err)
	}
	return nil
}
