package broker

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unicode/utf8"
)

// workOutput is where a background command's stdout and stderr both go: a
// log file holding the first logCap bytes, a count of every byte, and a ring
// of the last TailBytes. The sandbox relays the two streams concurrently, so
// Write is serialised. It never fails: a log write error only stops the log,
// and so does a write that would take the log's file system below its floor
// of free space (logRoom): the records directory is the host's disk, which
// no grant's disk guard watches, and a session's audit records share it.
type workOutput struct {
	mu      sync.Mutex
	f       *os.File // nil once closed or failed
	logCap  int64
	logged  int64
	full    bool // the log stopped at its file system's floor
	total   int64
	ring    []byte // the last len(ring) bytes, oldest at next once full
	next    int
	ringCap int
	// removed reports that the log file was removed (see
	// Session.retire): the session keeps only its latest ended logs.
	removed bool
}

func newWorkOutput(f *os.File, logCap int64) *workOutput {
	return &workOutput{f: f, logCap: logCap, ringCap: TailBytes}
}

func (o *workOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := len(p)
	o.total += int64(n)
	if o.f != nil && o.logged < o.logCap {
		k := int(min(int64(n), o.logCap-o.logged))
		if !logRoom(o.f, k) {
			o.full = true
			o.f.Close()
			o.f = nil
		} else if w, err := o.f.Write(p[:k]); err != nil {
			o.logged += int64(w)
			o.f.Close()
			o.f = nil
		} else {
			o.logged += int64(w)
		}
	}
	if n >= o.ringCap {
		o.ring = append(o.ring[:0], p[n-o.ringCap:]...)
		o.next = 0
		return n, nil
	}
	for len(p) > 0 {
		if len(o.ring) < o.ringCap {
			k := min(o.ringCap-len(o.ring), len(p))
			o.ring = append(o.ring, p[:k]...)
			p = p[k:]
			continue
		}
		k := copy(o.ring[o.next:], p)
		o.next = (o.next + k) % o.ringCap
		p = p[k:]
	}
	return n, nil
}

// close closes the log file; later writes are only counted.
func (o *workOutput) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.f != nil {
		o.f.Close()
		o.f = nil
	}
}

// dropTail frees the ring of an ended work's output: its status then shows
// none of it, and its log file still holds it.
func (o *workOutput) dropTail() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ring, o.next = nil, 0
}

// removeLog removes the log file at path, which the work no longer writes,
// and returns the bytes it held.
func (o *workOutput) removeLog(path string) (int64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.removed {
		return 0, nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("removing background log %s: %w", path, err)
	}
	o.removed = true
	return o.logged, nil
}

// logState is the bytes the log file holds and whether it was removed.
func (o *workOutput) logState() (logged int64, removed bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.logged, o.removed
}

// size is the bytes written so far, whether they passed the log cap, and
// how many the log holds when it stopped short of the cap at its file
// system's floor (else -1).
func (o *workOutput) size() (total int64, capped bool, fullAt int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	fullAt = -1
	if o.full {
		fullAt = o.logged
	}
	return o.total, o.total > o.logCap, fullAt
}

// tailOutput is the end of the output; all reports that it is all of it.
type tailOutput struct {
	data []byte
	all  bool
}

// tail returns the last TailBytes of the output, starting on a UTF-8
// character boundary when the ring cut into one.
func (o *workOutput) tail() tailOutput {
	o.mu.Lock()
	data := append(append([]byte(nil), o.ring[o.next:]...), o.ring[:o.next]...)
	total := o.total
	o.mu.Unlock()
	if int64(len(data)) == total {
		return tailOutput{data: data, all: true}
	}
	for i := 0; i < utf8.UTFMax-1 && len(data) > 0 && !utf8.RuneStart(data[0]); i++ {
		data = data[1:]
	}
	return tailOutput{data: data}
}

// fit returns the end of t whose text as the model reads it (a byte that is
// not UTF-8 shown as \xNN, wire.ValidUTF8) costs at most budget bytes once
// JSON-escaped, starting on a character. Output the model reads is held to
// the call's output limit, and the escapes of control characters or binary
// cost up to six times the bytes they stand for.
func (t tailOutput) fit(budget int64) tailOutput {
	var cost int64
	i := len(t.data)
	for i > 0 {
		r, size := utf8.DecodeLastRune(t.data[:i])
		c := int64(5) // \xNN, its backslash escaped
		if r != utf8.RuneError || size > 1 {
			c = int64(runeCost(r))
		}
		if cost+c > budget {
			break
		}
		cost += c
		i -= size
	}
	if i == 0 {
		return t
	}
	return tailOutput{data: t.data[i:]}
}

// textCost is at least what s costs in a JSON string.
func textCost(s string) int {
	n := 0
	for _, r := range s {
		n += runeCost(r)
	}
	return n
}

// runeCost is at least what r costs in a JSON string, whichever encoder
// writes it: two bytes for the short escapes, six for \u00XX, for the
// line and paragraph separators and for '<', '>' and '&' (escaped for HTML
// by encoding/json's default).
func runeCost(r rune) int {
	switch {
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t' || r == '\b' || r == '\f':
		return 2
	case r < 0x20 || r == '\u2028' || r == '\u2029' || r == '<' || r == '>' || r == '&':
		return 6
	case r == utf8.RuneError:
		return 3
	}
	return utf8.RuneLen(r)
}
