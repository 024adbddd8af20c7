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
path is absolute or relative to the working directory. offset is the 1-based first line to return and limit the number of lines; omit both to read from the start. tail returns the last N lines instead (not with offset or limit).
paths reads several files in one call instead of path: each result starts with a line "==> PATH <==", a file that cannot be read says why in its place without failing the others, and the output cap is shared between them.
Limits: only regular files holding UTF-8 text are read; a directory, device, FIFO, socket or binary file (a NUL byte in the first 8 KiB, or invalid UTF-8) is refused. At most 50 paths. Output is capped (1 MiB by default, for all paths together); when cut, it ends with "[truncated: N more bytes; read further with offset/limit]" (a tail keeps its end and says so at its start). Paths outside the allowed root are refused.`

// MaxReadPaths is the most paths one read_file call may name.
const MaxReadPaths = 50

// ReadFileArgs are read_file's arguments: one path or several.
type ReadFileArgs struct {
	Path   string   `json:"path,omitempty" desc:"the file to read, absolute or relative to the working directory (required unless paths is given)"`
	Paths  []string `json:"paths,omitempty" desc:"several files to read in one call, instead of path; each result is labelled with its path"`
	Offset int      `json:"offset,omitempty" desc:"1-based number of the first line to return (default 1)" min:"1"`
	Limit  int      `json:"limit,omitempty" desc:"the number of lines to return (default: to the end, within the output cap)" min:"1"`
	Tail   int      `json:"tail,omitempty" desc:"return the last N lines (not with offset or limit)" min:"1"`
}

func (a *ReadFileArgs) validate() error {
	switch {
	case a.Path != "" && a.Paths != nil:
		return fmt.Errorf("field %q: give either path or paths, not both", "paths")
	case a.Paths != nil && len(a.Paths) == 0:
		return fmt.Errorf("field %q: must name at least one path", "paths")
	case len(a.Paths) > MaxReadPaths:
		return fmt.Errorf("field %q: at most %d paths in one call, got %d", "paths", MaxReadPaths, len(a.Paths))
	case a.Paths == nil:
		if a.Path == "" {
			return fmt.Errorf("field %q: required, but missing or empty (give path, or paths for several files)", "path")
		}
		if err := checkPath("path", a.Path, false); err != nil {
			return err
		}
	}
	for i, p := range a.Paths {
		if err := checkPath(fmt.Sprintf("paths[%d]", i), p, false); err != nil {
			return err
		}
	}
	if a.Offset < 0 {
		return fmt.Errorf("field %q: must be >= 1, got %d", "offset", a.Offset)
	}
	if a.Limit < 0 {
		return fmt.Errorf("field %q: must be >= 1, got %d", "limit", a.Limit)
	}
	switch {
	case a.Tail < 0:
		return fmt.Errorf("field %q: must be >= 1, got %d", "tail", a.Tail)
	case a.Tail > 0 && a.Offset > 0:
		return fmt.Errorf("field %q: tail counts from the end, offset from the start: give one, not both", "tail")
	case a.Tail > 0 && a.Limit > 0:
		return fmt.Errorf("field %q: tail already says how many lines: give tail or limit, not both", "tail")
	}
	return nil
}

// paths returns every path the call reads.
func (a ReadFileArgs) paths() []string {
	if a.Paths != nil {
		return a.Paths
	}
	return []string{a.Path}
}

// Access reports every file read.
func (a ReadFileArgs) Access() Access {
	var acc Access
	for _, p := range a.paths() {
		acc.Paths = append(acc.Paths, PathAccess{Path: p})
	}
	return acc
}

var readFile = define("read_file", readFileDescription, runReadFile)

// sniffBytes is how much of a file's start is searched for a NUL byte.
const sniffBytes = 8 << 10

func runReadFile(ctx context.Context, env Env, a ReadFileArgs) wire.ToolOutput {
	cp := outputCap(env)
	if a.Paths == nil {
		return readOne(ctx, env, a, "path", a.Path, cp)
	}
	// Several files share the cap: each gets an equal part, so a large
	// first file cannot crowd out the rest.
	share := max(cp/len(a.Paths), 1)
	var b strings.Builder
	res := wire.ToolOutput{}
	failed := 0
	for i, p := range a.Paths {
		out := readOne(ctx, env, a, fmt.Sprintf("paths[%d]", i), p, share)
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "==> %s <==\n", p)
		b.WriteString(out.Content)
		if !strings.HasSuffix(out.Content, "\n") {
			b.WriteByte('\n')
		}
		if out.IsError {
			failed++
			continue
		}
		res.Meta.Count++
		res.Meta.Bytes += out.Meta.Bytes
		res.Meta.OmittedBytes += out.Meta.OmittedBytes
		res.Truncated = res.Truncated || out.Truncated
	}
	res.Content = b.String()
	// The call failed only when no file could be read.
	res.IsError = failed == len(a.Paths)
	return res
}

// maxReadBuf is read_file's largest read buffer.
const maxReadBuf = 64 << 10

// outputGrow is the room read_file's output buffer is given before the
// lines are copied into it: what is left of the file after the skipped
// bytes (size as fstat gave it, never less than nothing: a file that grew
// while its first lines were skipped has more behind it than size says),
// at most the output cap cp, plus one buffered line of bufSize.
func outputGrow(size, skipped int64, cp, bufSize int) int {
	return int(min(max(size-skipped, 0), int64(cp))) + bufSize
}

// readBufSize is the read buffer for a file of size bytes: room for the
// whole file when it is small, never less than the sniff and never more
// than maxReadBuf (a size of 0, as files in /proc report, gets the most).
// A small file's call then allocates and clears kilobytes, not the 128 KiB
// of fresh pages that cost a new sandbox's call a page fault each.
func readBufSize(size int64) int {
	if size <= 0 || size >= maxReadBuf {
		return maxReadBuf
	}
	return max(int(size)+1, sniffBytes)
}

// readOne reads one file for read_file; field names the argument that gave
// its path, cp caps what it returns.
func readOne(ctx context.Context, env Env, a ReadFileArgs, field, path string, cp int) wire.ToolOutput {
	t, err := resolve(env, field, path)
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
	br := bufio.NewReaderSize(f, readBufSize(size))
	head, _ := br.Peek(sniffBytes)
	if len(head) == 0 {
		// A size of 0 alone is not trusted: files in /proc report 0 and hold text.
		return wire.ToolOutput{Content: fmt.Sprintf("(%s is empty: 0 bytes)", t.shown)}
	}
	size = max(size, int64(len(head)))
	if bytes.IndexByte(head, 0) >= 0 {
		return Failure("field %q: %s is a binary file (%d bytes; a NUL byte in its first 8 KiB); read_file reads text only", field, t.shown, size)
	}
	if a.Tail > 0 {
		return readTail(ctx, t, f, br, field, a.Tail, cp)
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

	var out bytes.Buffer
	// The cap plus one buffered line: no regrowth. The file may have grown
	// since fstat gave size, so more than size may have been skipped.
	out.Grow(outputGrow(size, skipped, cp, br.Size()))
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
		return Failure("field %q: %s is a binary file (%d bytes; not valid UTF-8); read_file reads text only", field, t.shown, size)
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

// readTail returns the last n lines of f, whose start br has buffered
// (already sniffed as text). It reads the whole file once, keeping only its
// last cp+1 bytes (a window that tells whether its first kept byte starts a
// line) and counting newlines: a file in /proc has no size to seek from,
// and a regular file is read at the speed of the disk. Past cp the start of
// the tail is cut at a line, and the result says so first. Memory is the
// window's, whatever the file: keeping each line apart, with the size of
// each one cut, took 8 to 32 bytes for every one-byte line.
func readTail(ctx context.Context, t target, f *os.File, br *bufio.Reader, field string, n, cp int) wire.ToolOutput {
	keep := cp + 1
	var (
		win      []byte // the last bytes read, at most 2*keep
		total    int64  // bytes read
		newlines int64
		last     byte
	)
	buf := make([]byte, maxReadBuf)
	for {
		if err := ctx.Err(); err != nil {
			return Failure("read_file stopped: %v", err)
		}
		m, err := br.Read(buf)
		if m > 0 {
			chunk := buf[:m]
			newlines += int64(bytes.Count(chunk, []byte{'\n'}))
			last = chunk[m-1]
			total += int64(m)
			if len(chunk) > keep {
				chunk = chunk[len(chunk)-keep:]
			}
			if len(win)+len(chunk) > 2*keep {
				win = win[:copy(win, win[len(win)-(keep-len(chunk)):])]
			}
			win = append(win, chunk...)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Failure("%v", t.describe(err))
		}
	}
	if len(win) > keep {
		win = win[len(win)-keep:]
	}
	winStart := total - int64(len(win))
	lines := newlines // the file's lines: each ends at a newline, the last perhaps at the end
	if last != '\n' {
		lines++
	}
	// Walk back from the end over the last n lines while they fit in cp.
	start, shown := len(win), 0
	region := len(win)
	if region > 0 && win[region-1] == '\n' {
		region-- // the last line's own newline
	}
	for shown < n {
		i := bytes.LastIndexByte(win[:region], '\n')
		s := i + 1 // where the line starts, if it starts in the window
		if i < 0 && winStart > 0 {
			break // it starts before the window: longer than cp
		}
		if len(win)-s > cp {
			break
		}
		start, shown, region = s, shown+1, i
		if i < 0 {
			break // the file's first line
		}
	}
	if shown == 0 {
		// The last line alone is longer than cp: its end, from a character's start.
		start = len(win) - cp
		for start < len(win) && !utf8.RuneStart(win[start]) {
			start++
		}
		shown = 1
	}
	content := win[start:]
	if !utf8.Valid(content) {
		return Failure("field %q: %s is a binary file (not valid UTF-8); read_file reads text only", field, t.shown)
	}
	// Bytes cut: from the first of the last n lines to what is shown.
	var dropped int64
	if from := winStart + int64(start); from > 0 {
		first := int64(0)
		if lines > int64(n) {
			first = tailStart(ctx, f, lines-int64(n))
		}
		dropped = max(from-first, 0)
	}
	res := wire.ToolOutput{Meta: wire.Meta{Bytes: int64(len(content)), Count: shown}}
	if dropped == 0 {
		res.Content = string(content)
		return res
	}
	res.Content = fmt.Sprintf("[truncated: the %d bytes before this were cut to fit the output cap; read them with offset/limit]\n", dropped) + string(content)
	res.Truncated = true
	res.Meta.OmittedBytes = dropped
	return res
}

// tailStart returns the offset in f where its line k (from 0) starts:
// just after its k-th newline, read again with pread. A file changed since
// gives a number as wrong as the change, and one that cannot be read so
// (0) counts every byte before the tail as cut: only the note of bytes cut
// shows either.
func tailStart(ctx context.Context, f *os.File, k int64) int64 {
	buf := make([]byte, maxReadBuf)
	for base := int64(0); ; {
		if ctx.Err() != nil {
			return 0
		}
		m, err := f.ReadAt(buf, base)
		for at := 0; at < m; {
			i := bytes.IndexByte(buf[at:m], '\n')
			if i < 0 {
				break
			}
			at += i + 1
			if k--; k == 0 {
				return base + int64(at)
			}
		}
		base += int64(m)
		if errors.Is(err, io.EOF) {
			return base // fewer lines than before: the file changed
		}
		if err != nil {
			return 0
		}
	}
}
