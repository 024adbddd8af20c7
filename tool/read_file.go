package tool

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/airlockhq/airlock/wire"
)

const readFileDescription = `Reads a text file and returns its raw contents (no line numbers added).
path is absolute or relative to the working directory. offset is the 1-based first line to return and limit the number of lines; omit both to read from the start.
Limits: only regular files holding UTF-8 text are read; a directory, device, FIFO, socket or binary file (a NUL byte in the first 8 KiB, or invalid UTF-8) is refused. Output is capped (1 MiB by default); when cut, it ends with "[truncated: N more bytes; read further with offset/limit]". Paths outside the allowed root are refused.`

// ReadFileArgs are read_file's arguments.
type ReadFileArgs struct {
	Path   string `json:"path" desc:"the file to read, absolute or relative to the working directory"`
	Offset int    `json:"offset,omitempty" desc:"1-based number of the first line to return (default 1)" min:"1"`
	Limit  int    `json:"limit,omitempty" desc:"the number of lines to return (default: to the end, within the output cap)" min:"1"`
}

func (a *ReadFileArgs) validate() error {
	if err := checkPath("path", a.Path, false); err != nil {
		return err
	}
	if a.Offset < 0 {
		return fmt.Errorf("field %q: must be >= 1, got %d", "offset", a.Offset)
	}
	if a.Limit < 0 {
		return fmt.Errorf("field %q: must be >= 1, got %d", "limit", a.Limit)
	}
	return nil
}

// Access reports the one file read.
func (a ReadFileArgs) Access() Access { return Access{Paths: []PathAccess{{Path: a.Path}}} }

var readFile = define("read_file", readFileDescription, runReadFile)

// sniffBytes is how much of a file's start is searched for a NUL byte.
const sniffBytes = 8 << 10

func runReadFile(ctx context.Context, env Env, a ReadFileArgs) wire.ToolOutput {
	t, err := resolve(env, "path", a.Path)
	if err != nil {
		return Failure("%v", err)
	}
	defer t.close()
	if env.hidden(t.shown) {
		return Failure("%v", t.describe(fs.ErrNotExist))
	}
	f, fi, err := t.openRegular(os.O_RDONLY)
	if err != nil {
		return Failure("%v", err)
	}
	defer f.Close()
	size := fi.Size()
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(sniffBytes)
	if len(head) == 0 {
		// A size of 0 alone is not trusted: files in /proc report 0 and hold text.
		return wire.ToolOutput{Content: fmt.Sprintf("(%s is empty: 0 bytes)", t.shown)}
	}
	size = max(size, int64(len(head)))
	if bytes.IndexByte(head, 0) >= 0 {
		return Failure("field %q: %s is a binary file (%d bytes; a NUL byte in its first 8 KiB); read_file reads text only", "path", t.shown, size)
	}

	// Skip to the first line wanted, holding at most one buffer of it.
	var skipped int64
	for line := 1; line < a.Offset; {
		if err := ctx.Err(); err != nil {
			return Failure("read_file stopped: %v", err)
		}
		chunk, err := br.ReadSlice('\n')
		skipped += int64(len(chunk))
		if err == nil {
			line++
			continue
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) {
			if len(chunk) > 0 {
				line++
			}
			return Failure("field %q: %d is past the end of %s, which has %d lines", "offset", a.Offset, t.shown, line-1)
		}
		return Failure("%v", t.describe(err))
	}

	cp := outputCap(env)
	var out bytes.Buffer
	out.Grow(int(min(size-skipped, int64(cp)) + 64<<10)) // the cap plus one buffered line: no regrowth
	lines, truncated := 0, false
	for a.Limit == 0 || lines < a.Limit {
		chunk, err := br.ReadSlice('\n')
		out.Write(chunk)
		if err == nil {
			lines++
		}
		if out.Len() > cp {
			truncated = true
			break
		}
		if err == nil || errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) {
			break
		}
		return Failure("%v", t.describe(err))
	}
	content := out.Bytes()
	var omitted int64
	if truncated {
		content = cutText(content, cp)
		omitted = max(size-skipped-int64(len(content)), int64(out.Len()-len(content)))
	}
	if !utf8.Valid(content) {
		return Failure("field %q: %s is a binary file (%d bytes; not valid UTF-8); read_file reads text only", "path", t.shown, size)
	}
	res := wire.ToolOutput{Meta: wire.Meta{Bytes: int64(len(content))}}
	if !truncated {
		res.Content = string(content)
		return res
	}
	marker := fmt.Sprintf("\n[truncated: %d more bytes; read further with offset/limit]", omitted)
	var b strings.Builder
	b.Grow(len(content) + len(marker))
	b.Write(content)
	b.WriteString(marker)
	res.Content = b.String()
	res.Truncated = true
	res.Meta.OmittedBytes = omitted
	return res
}

// cutText shortens b to at most n bytes, at the last line end in its second
// half if there is one, else at a rune boundary.
func cutText(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	b = b[:n]
	if i := bytes.LastIndexByte(b, '\n'); i >= n/2 {
		return b[:i+1]
	}
	for i := 0; i < utf8.UTFMax && len(b) > 0; i++ {
		r, size := utf8.DecodeLastRune(b)
		if r != utf8.RuneError || size != 1 {
			break
		}
		b = b[:len(b)-1]
	}
	return b
}
