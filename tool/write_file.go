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

var writeFile = define("write_file", writeFileDescription, runWriteFile)

func runWriteFile(ctx context.Context, env Env, a WriteFileArgs) wire.ToolOutput {
	if n, limit := int64(len(a.Content)), fileCap(env); n > limit {
		return Failure("field %q: %d bytes is larger than the file-size limit of %d bytes", "content", n, limit)
	}
	t, err := resolve(env, "path", a.Path)
	if err != nil {
		return Failure("%v", err)
	}
	defer t.close()
	lf, err := t.writeTarget()
	if err != nil {
		return Failure("%v", err)
	}
	var base *readBase
	if lf.fi != nil {
		base = &readBase{fi: lf.fi}
	}
	if err := t.replace(lf, []byte(a.Content), base); err != nil {
		return Failure("write_file %v", err)
	}
	return wire.ToolOutput{
		Content: fmt.Sprintf("wrote %d bytes to %s", len(a.Content), t.shown),
		Meta:    wire.Meta{Bytes: int64(len(a.Content))},
	}
}

// writeTarget finds the file write_file replaces or creates: its parent
// must be a directory, and a file already there must be a regular file the
// caller may write (checked by opening it for writing, which changes
// nothing: a FIFO or device is refused from its mode before any open).
func (t target) writeTarget() (leaf, error) {
	if t.rel == "." {
		return leaf{}, fmt.Errorf("field %q: %s is a directory, not a file", t.field, t.shown)
	}
	if t.dirOnly {
		return leaf{}, fmt.Errorf("field %q: the path ends in a slash, \".\" or \"..\", so it names a directory (%s), not a file", t.field, t.shown)
	}
	dir := filepath.Dir(t.rel)
	di, err := t.root.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return leaf{}, fmt.Errorf("field %q: the parent directory %s does not exist (write_file does not create directories)", t.field, filepath.Dir(t.shown))
	case err != nil:
		return leaf{}, t.describe(err)
	case !di.IsDir():
		return leaf{}, fmt.Errorf("field %q: the parent %s is %s, not a directory", t.field, filepath.Dir(t.shown), kindOf(di.Mode()))
	}
	lf, err := t.resolveLeaf()
	if err != nil {
		return leaf{}, t.describe(err)
	}
	if lf.fi == nil {
		return lf, nil
	}
	if !lf.fi.Mode().IsRegular() {
		return leaf{}, fmt.Errorf("field %q: %s is %s, not a regular file", t.field, t.shown, kindOf(lf.fi.Mode()))
	}
	f, err := t.root.OpenFile(lf.rel, os.O_WRONLY|openFlags, 0)
	if err != nil {
		return leaf{}, t.openError(err)
	}
	f.Close()
	return lf, nil
}
