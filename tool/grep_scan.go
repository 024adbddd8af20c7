package tool

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"unicode/utf8"
)

// A grepWorker reads and scans files, reusing its buffer.
type grepWorker struct {
	s    *grepSearch
	buf  []byte
	fold []byte // a case-folded copy of buf, for ignore_case
}

// file reads and scans one file. An unreadable or vanished file yields an
// empty result: it is skipped silently, like an unreadable directory.
func (w *grepWorker) file(dir *os.Root, name, shown string) fileResult {
	f, err := dir.OpenFile(name, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return fileResult{}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return fileResult{}
	}
	if fi.Size() > w.s.maxFile {
		return fileResult{large: true, shown: shown}
	}
	b, err := w.read(f, int(fi.Size()))
	if err != nil {
		return fileResult{}
	}
	if int64(len(b)) > w.s.maxFile {
		return fileResult{large: true, shown: shown}
	}
	if bytes.IndexByte(b[:min(len(b), sniffBytes)], 0) >= 0 {
		return fileResult{binary: true}
	}
	r := w.s.scan(b, shown, &w.fold)
	if cap(w.buf) > 4<<20 {
		w.buf, w.fold = nil, nil // do not hold a large file's buffers for the rest of the walk
	}
	return r
}

// read reads f (size bytes expected) into the worker's buffer, up to the file cap + 1.
func (w *grepWorker) read(f *os.File, size int) ([]byte, error) {
	if cap(w.buf) < size+1 {
		w.buf = make([]byte, 0, max(size+1, 64<<10))
	}
	b := w.buf[:0]
	for {
		if len(b) == cap(b) {
			if int64(len(b)) > w.s.maxFile {
				return b, nil
			}
			b = slices.Grow(b, len(b))
		}
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF || (n > 0 && len(b) == size) {
			// At the size fstat gave: a file growing meanwhile is read as it was.
			w.buf = b[:0]
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

type hit struct{ start, end, line int }

// scan finds the matching lines of b and renders them for the output mode.
func (s *grepSearch) scan(b []byte, shown string, scratch *[]byte) fileResult {
	r := fileResult{shown: shown}
	shown = shownName(shown)
	switch s.mode {
	case grepFiles:
		s.m.each(b, scratch, func(int, int) bool { r.matches = 1; return false })
		if r.matches > 0 {
			r.text = []byte(shown + "\n")
		}
		return r
	case grepCount:
		s.m.each(b, scratch, func(int, int) bool { r.matches++; return true })
		if r.matches > 0 {
			r.text = []byte(shown + ":" + strconv.Itoa(r.matches) + "\n")
		}
		return r
	}
	// Content: every output line costs at least len(shown)+4 bytes, so keep
	// no more hits than could fit in the output.
	maxHits := s.maxOut/(len(shown)+4) + 1
	if s.head > 0 && s.head < maxHits {
		maxHits = s.head + 1 // not min(maxHits, s.head+1): s.head may be the largest int
	}
	var hits []hit
	line, last := 1, 0
	s.m.each(b, scratch, func(start, end int) bool {
		line += bytes.Count(b[last:start], []byte{'\n'})
		last = start
		hits = append(hits, hit{start, end, line})
		return len(hits) < maxHits
	})
	r.matches = len(hits)
	if len(hits) == maxHits {
		r.cut = true
	}
	r.text = s.render(b, hits, shown)
	if len(r.text) > s.maxOut {
		r.cut = true
	}
	return r
}

// render writes hits of one file with their context, as grep -n does.
func (s *grepSearch) render(b []byte, hits []hit, shown string) []byte {
	var out []byte
	c := s.context
	for i := 0; i < len(hits) && len(out) <= s.maxOut; {
		// A group runs from c lines before hits[i] to c lines after hits[j].
		j, last := i, hits[i].line+c
		for j+1 < len(hits) && hits[j+1].line <= last+1 {
			j++
			last = hits[j].line + c
		}
		line, off := hits[i].line, hits[i].start
		for ; line > 1 && line > hits[i].line-c; line-- {
			off = bytes.LastIndexByte(b[:off-1], '\n') + 1
		}
		if i > 0 && c > 0 {
			out = append(out, "--\n"...)
		}
		for k := i; line <= last && off < len(b); line++ {
			end := lineEnd(b, off)
			sep := byte('-')
			if k <= j && hits[k].line == line {
				sep = ':'
				k++
			}
			out = append(out, shown...)
			out = append(out, sep)
			out = strconv.AppendInt(out, int64(line), 10)
			out = append(out, sep)
			out = appendCutLine(out, b[off:end])
			out = append(out, '\n')
			off = end + 1
		}
		i = j + 1
	}
	return out
}

// appendCutLine appends text, cut to grepMaxLineBytes at a rune boundary.
func appendCutLine(out, text []byte) []byte {
	if len(text) <= grepMaxLineBytes {
		return append(out, text...)
	}
	n := grepMaxLineBytes
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	out = append(out, text[:n]...)
	return fmt.Appendf(out, " [... line cut: %d more bytes]", len(text)-n)
}
