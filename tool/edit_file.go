package tool

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/airlockhq/airlock/wire"
)

const editFileDescription = `Replaces exact text in a file: old_string becomes new_string. Returns how many replacements were made and a unified diff of the change.
old_string must occur exactly once unless replace_all is true (then every occurrence is replaced); an absent or non-unique old_string is refused without changing the file, so include enough surrounding text to make it unique. Whitespace and indentation must match exactly.
edits: several edits to one file in one call, [{"old_string", "new_string", "replace_all"}], instead of old_string/new_string/replace_all. Each applies to the text the previous ones left; if any is refused, nothing is written (all or none). dry_run: true returns the diff without writing the file.
Limits: regular text files only, up to the file-size limit (64 MiB by default); at most 100 edits; the diff shown is capped (32 KiB, or the output limit when smaller); the file keeps its mode; paths outside the allowed root are refused.`

// MaxEdits is the most edits one edit_file call may carry.
const MaxEdits = 100

// maxDiffBytes caps the diff edit_file returns.
const maxDiffBytes = 32 << 10

// Edit is one replacement of edit_file.
type Edit struct {
	OldString  string  `json:"old_string" desc:"the exact text to replace; must be unique in the file (as the previous edits left it) unless replace_all is true"`
	NewString  *string `json:"new_string" desc:"the text to put in its place; must differ from old_string"`
	ReplaceAll bool    `json:"replace_all,omitempty" desc:"replace every occurrence of old_string (default false)"`
}

// EditFileArgs are edit_file's arguments: one edit (old_string, new_string,
// replace_all) or several (edits), never both.
type EditFileArgs struct {
	Path       string  `json:"path" desc:"the file to edit, absolute or relative to the working directory"`
	OldString  string  `json:"old_string,omitempty" desc:"the exact text to replace; must be unique in the file unless replace_all is true (required unless edits is given)"`
	NewString  *string `json:"new_string,omitempty" desc:"the text to put in its place; must differ from old_string (required with old_string)"`
	ReplaceAll bool    `json:"replace_all,omitempty" desc:"replace every occurrence of old_string (default false)"`
	Edits      []Edit  `json:"edits,omitempty" desc:"several edits applied in order, all or none, instead of old_string/new_string/replace_all"`
	DryRun     bool    `json:"dry_run,omitempty" desc:"return the diff the edits would make without writing the file (default false)"`
}

func (a *EditFileArgs) validate() error {
	if err := checkPath("path", a.Path, false); err != nil {
		return err
	}
	if len(a.Edits) > 0 {
		switch {
		case a.OldString != "":
			return fmt.Errorf("field %q: give either edits or old_string/new_string, not both", "old_string")
		case a.NewString != nil:
			return fmt.Errorf("field %q: give either edits or old_string/new_string, not both", "new_string")
		case a.ReplaceAll:
			return fmt.Errorf("field %q: with edits, set replace_all on each edit", "replace_all")
		case len(a.Edits) > MaxEdits:
			return fmt.Errorf("field %q: at most %d edits in one call, got %d", "edits", MaxEdits, len(a.Edits))
		}
		for i, e := range a.Edits {
			if err := checkEdit(fmt.Sprintf("edits[%d].", i), e); err != nil {
				return err
			}
		}
		return nil
	}
	if a.Edits != nil {
		return fmt.Errorf("field %q: must hold at least one edit", "edits")
	}
	if a.OldString == "" && a.NewString == nil {
		return fmt.Errorf("field %q: required, but missing (or give edits)", "old_string")
	}
	return checkEdit("", Edit{OldString: a.OldString, NewString: a.NewString, ReplaceAll: a.ReplaceAll})
}

// checkEdit checks one edit; prefix names it in a list ("edits[2].").
func checkEdit(prefix string, e Edit) error {
	if e.OldString == "" {
		return fmt.Errorf("field %q: must not be empty", prefix+"old_string")
	}
	if e.NewString == nil {
		return fmt.Errorf("field %q: required, but missing", prefix+"new_string")
	}
	if e.OldString == *e.NewString {
		return fmt.Errorf("field %q: must differ from old_string, got the same %d bytes", prefix+"new_string", len(*e.NewString))
	}
	return nil
}

// edits returns the call's edits, the single form as a list of one.
func (a EditFileArgs) edits() []Edit {
	if len(a.Edits) > 0 {
		return a.Edits
	}
	return []Edit{{OldString: a.OldString, NewString: a.NewString, ReplaceAll: a.ReplaceAll}}
}

// Access reports the one file modified (read only, for a dry run).
func (a EditFileArgs) Access() Access {
	return Access{Paths: []PathAccess{{Path: a.Path, Write: !a.DryRun}}}
}

var editFile = define("edit_file", editFileDescription, runEditFile)

func runEditFile(ctx context.Context, env Env, a EditFileArgs) wire.ToolOutput {
	t, err := resolve(env, "path", a.Path)
	if err != nil {
		return Failure("%v", err)
	}
	defer t.close()
	mode := os.O_RDWR
	if a.DryRun {
		mode = os.O_RDONLY // a dry run may look at a read-only file
	}
	f, fi, err := t.openRegular(mode)
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
	edits := a.edits()
	updated, k := old, 0
	for i, e := range edits {
		field := "old_string"
		if len(a.Edits) > 0 {
			field = fmt.Sprintf("edits[%d].old_string", i)
		}
		n := bytes.Count(updated, []byte(e.OldString))
		switch {
		case n == 0 && i > 0:
			return Failure("field %q: not found in %s after the edits before it (it must match exactly, including whitespace); nothing was written", field, t.shown)
		case n == 0:
			return Failure("field %q: not found in %s (it must match exactly, including whitespace)%s", field, t.shown, noneWritten(len(edits)))
		case n > 1 && !e.ReplaceAll:
			return Failure("field %q: found %d times in %s; add surrounding text to make it unique, or set replace_all%s", field, n, t.shown, noneWritten(len(edits)))
		}
		// The size the replacement makes, checked before it is built: n
		// short matches each replaced by a long string would otherwise
		// allocate n times its length only to be refused.
		if size := int64(len(updated)) + int64(n)*(int64(len(*e.NewString))-int64(len(e.OldString))); size > limit {
			nf := "new_string"
			if len(a.Edits) > 0 {
				nf = fmt.Sprintf("edits[%d].new_string", i)
			}
			return Failure("field %q: the edited file would be %d bytes, larger than the file-size limit of %d bytes", nf, size, limit)
		}
		updated = bytes.ReplaceAll(updated, []byte(e.OldString), []byte(*e.NewString))
		k += n
	}
	noun := "replacement"
	if k > 1 {
		noun = "replacements"
	}
	// The diff is output the model reads: held to the output limit, as
	// its JSON carries it, beside the line that names the edit.
	room := outputCap(env) - 6*len(t.shown) - 128
	diff := cutDiff(t.shown, old, updated, max(min(maxDiffBytes, room), 0), jsonCost)
	meta := wire.Meta{Count: k, Bytes: int64(len(updated))}
	if a.DryRun {
		return wire.ToolOutput{
			Content: fmt.Sprintf("dry run: would make %d %s in %s; nothing was written\n%s", k, noun, t.shown, diff),
			Meta:    meta,
		}
	}
	lf, err := t.resolveLeaf()
	if err != nil {
		return Failure("%v", t.describe(err))
	}
	if lf.fi == nil || !os.SameFile(lf.fi, fi) {
		return Failure("edit_file could not write %s: %v; the file was left as the other writer made it", t.shown, errChanged)
	}
	if err := t.replace(lf, updated, &readBase{f: f, fi: fi, content: old}); err != nil {
		return Failure("edit_file %v", err)
	}
	return wire.ToolOutput{
		Content: fmt.Sprintf("made %d %s in %s\n%s", k, noun, t.shown, diff),
		Meta:    meta,
	}
}

// noneWritten notes, for a call of several edits, that none was applied.
func noneWritten(edits int) string {
	if edits > 1 {
		return "; nothing was written"
	}
	return ""
}
