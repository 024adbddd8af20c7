package tool

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// A grepWorker reads and scans files, reusing its buffer.
type grepWorker struct {
	s    *grepSearch
	buf  []byte
	fold []byte // a case-folded copy of buf, for ignore_case
}

// keepBuf is the largest buffer a worker keeps between files: one per CPU
// is kept for the whole walk.
const keepBuf = 1 << 20

// smallRead is what a file whose size is 0 (as files in /proc report) is
// read into before the budget is asked for more.
const smallRead = 64 << 10

// file reads and scans one file. An unreadable or vanished file yields an
// empty result: it is skipped silently, like an unreadable directory. A
// file whose first 8 KiB hold a NUL byte is binary, found without reading
// the rest; the rest is read only within the search's budget (readBudget).
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
	var head [sniffBytes]byte
	n, err := f.ReadAt(head[:min(int64(len(head)), max(fi.Size(), 1))], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return fileResult{}
	}
	if bytes.IndexByte(head[:n], 0) >= 0 {
		return fileResult{binary: true}
	}
	b, taken, err := w.read(f, int(fi.Size()))
	defer func() {
		// A large file's buffers are not kept for the rest of the walk,
		// and are collected before the budget they took is given back:
		// else the next reader's buffers came on top of them, garbage
		// the collector had not reached yet, and a search held twice
		// its budget.
		large := cap(w.buf) > keepBuf || cap(w.fold) > keepBuf
		if cap(w.buf) > keepBuf {
			w.buf = nil
		}
		if cap(w.fold) > keepBuf {
			w.fold = nil
		}
		if large && taken > 0 {
			runtime.GC()
		}
		w.s.budget.give(taken)
	}()
	if err != nil {
		return fileResult{}
	}
	if int64(len(b)) > w.s.maxFile {
		return fileResult{large: true, shown: shown}
	}
	if bytes.IndexByte(b[:min(len(b), sniffBytes)], 0) >= 0 {
		return fileResult{binary: true}
	}
	return w.s.scan(b, shown, &w.fold)
}

// read reads f (size bytes expected) into the worker's buffer, up to the
// file cap + 1, and returns what it took of the search's budget. The
// budget is asked for once, holding none, so no two readers wait for
// each other: the file's size (and as much again for ignore_case's
// folded copy), or, for a file whose size is 0, the whole cap once it
// holds more than smallRead.
func (w *grepWorker) read(f *os.File, size int) ([]byte, int64, error) {
	per := int64(1)
	if w.s.m.fold {
		per = 2
	}
	var taken int64
	want := size + 1
	if size == 0 {
		want = smallRead
	}
	if want > keepBuf {
		taken = per * int64(want)
		w.s.budget.take(taken)
	}
	if cap(w.buf) < want {
		w.buf = make([]byte, 0, max(want, 64<<10))
	}
	b := w.buf[:0]
	for {
		if len(b) == cap(b) {
			if int64(len(b)) > w.s.maxFile {
				return b, taken, nil
			}
			if taken == 0 {
				// A file that said it was empty holds more: room for the
				// cap is asked for at once.
				taken = per * (w.s.maxFile + 1)
				w.s.budget.take(taken)
			}
			b = slices.Grow(b, min(len(b), int(w.s.maxFile)+1-len(b)+1))
		}
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF || (n > 0 && len(b) == size) {
			// At the size fstat gave: a file growing meanwhile is read as it was.
			w.buf = b[:0]
			return b, taken, nil
		}
		if err != nil {
			return nil, taken, err
		}
	}
}

// readBudget bounds the bytes grep's readers hold at once, with a
// weighted semaphore: one file of any size within the cap is always let
// through when nothing else is held. Without it every CPU's worker held a
// file of up to the cap at once (and its folded copy), so a search's
// memory grew with the host's CPUs, not with anything the grant says.
type readBudget struct {
	mu   sync.Mutex
	cond *sync.Cond
	used int64
	max  int64
}

func newReadBudget(max int64) *readBudget {
	b := &readBudget{max: max}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// take waits until n bytes fit, or nothing is held, and takes them. A nil
// budget takes nothing.
func (b *readBudget) take(n int64) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	for b.used > 0 && b.used+n > b.max {
		b.cond.Wait()
	}
	b.used += n
	b.mu.Unlock()
}

// give returns n bytes taken.
func (b *readBudget) give(n int64) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	b.cond.Broadcast()
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
