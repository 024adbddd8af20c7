package tool

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/airlockhq/airlock/wire"
)

const editFileDescription = `Replaces exact text in a file: old_string becomes new_string. Returns how many replacements were made.
old_string must occur exactly once unless replace_all is true (then every occurrence is replaced); an absent or non-unique old_string is refused without changing the file, so include enough surrounding text to make it unique. Whitespace and indentation must match exactly.
Limits: regular text files only, up to the file-size limit (64 MiB by default); the file keeps its mode; paths outside the allowed root are refused.`

// EditFileArgs are edit_file's arguments.
type EditFileArgs struct {
	Path       string `json:"path" desc:"the file to edit, absolute or relative to the working directory"`
	OldString  string `json:"old_string" desc:"the exact text to replace; must be unique in the file unless replace_all is true"`
	NewString  string `json:"new_string" desc:"the text to put in its place; must differ from old_string"`
	ReplaceAll bool   `json:"replace_all,omitempty" desc:"replace every occurrence of old_string (default false)"`
}

func (a *EditFileArgs) validate() error {
	if err := checkPath("path", a.Path, false); err != nil {
		return err
	}
	if a.OldString == "" {
		return fmt.Errorf("field %q: must not be empty", "old_string")
	}
	if a.OldString == a.NewString {
		return fmt.Errorf("field %q: must differ from old_string, got the same %d bytes", "new_string", len(a.NewString))
	}
	return nil
}

// Access reports the one file modified.
func (a EditFileArgs) Access() Access {
	return Access{Paths: []PathAccess{{Path: a.Path, Write: true}}}
}

var editFile = define("edit_file", editFileDescription, runEditFile)

func runEditFile(ctx context.Context, env Env, a EditFileArgs) wire.ToolOutput {
	t, err := resolve(env, "path", a.Path)
	if err != nil {
		return Failure("%v", err)
	}
	defer t.close()
	f, fi, err := t.openRegular(os.O_RDWR)
	if err != nil {
		return Failure("%v", err)
	}
	defer f.Close()
	limit := fileCap(env)
	if fi.Size() > limit {
		return Failure("field %q: %s is %d bytes, larger than the file-size limit of %d bytes", "path", t.shown, fi.Size(), limit)
	}
	old, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return Failure("%v", t.describe(err))
	}
	if int64(len(old)) > limit {
		return Failure("field %q: %s is larger than the file-size limit of %d bytes", "path", t.shown, limit)
	}
	if bytes.IndexByte(old[:min(len(old), sniffBytes)], 0) >= 0 {
		return Failure("field %q: %s is a binary file (%d bytes); edit_file edits text only", "path", t.shown, len(old))
	}
	k := bytes.Count(old, []byte(a.OldString))
	switch {
	case k == 0:
		return Failure("field %q: not found in %s (it must match exactly, including whitespace)", "old_string", t.shown)
	case k > 1 && !a.ReplaceAll:
		return Failure("field %q: found %d times in %s; add surrounding text to make it unique, or set replace_all", "old_string", k, t.shown)
	}
	updated := bytes.ReplaceAll(old, []byte(a.OldString), []byte(a.NewString))
	if int64(len(updated)) > limit {
		return Failure("field %q: the edited file would be %d bytes, larger than the file-size limit of %d bytes", "new_string", len(updated), limit)
	}
	lf, err := t.resolveLeaf()
	if err != nil {
		return Failure("%v", t.describe(err))
	}
	if lf.fi == nil || !os.SameFile(lf.fi, fi) {
		return Failure("edit_file could not write %s: it was replaced while being edited; the file was left as the other writer made it", t.shown)
	}
	f.Close()
	if err := t.replace(lf, updated); err != nil {
		return Failure("edit_file %v", err)
	}
	noun := "replacement"
	if k > 1 {
		noun = "replacements"
	}
	return wire.ToolOutput{
		Content: fmt.Sprintf("made %d %s in %s", k, noun, t.shown),
		Meta:    wire.Meta{Count: k, Bytes: int64(len(updated))},
	}
}
