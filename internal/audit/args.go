package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// MaxArgString is the longest string value of a call's arguments a record
// keeps as it was sent (escapes included). A longer one (a write_file's
// content, a long command) is abridged: see Abridge.
const MaxArgString = 4 << 10

// minRun is the shortest run of blanks, or of one repeated character, that
// an abridged string shows as a count.
const minRun = 16

// SetArgs puts a call's arguments in r: args must already have every secret
// redacted. Arguments with a string longer than MaxArgString are abridged
// (see Abridge), and then ArgsBytes and ArgsSHA256 say how long the whole
// arguments were and hash them exactly as given, so a record that cannot
// hold all of a call's arguments still fixes what they were.
func (r *Record) SetArgs(args json.RawMessage) {
	r.Args, r.ArgsBytes, r.ArgsSHA256 = args, 0, ""
	if short, cut := Abridge(args, MaxArgString); cut {
		sum := sha256.Sum256(args)
		r.Args, r.ArgsBytes, r.ArgsSHA256 = short, len(args), hex.EncodeToString(sum[:])
	}
}

// Abridge returns raw (JSON) with every string literal longer than max
// bytes (as sent, escapes included) abridged, and whether it changed any.
// In such a string each run of at least 16 blanks (white space, control
// and invisible format characters, in any mix), or of one character
// repeated, becomes a count, "…[4100 blanks]…" or "…[900× x]…", so
// padding cannot push what follows out of view; if what is left is still
// longer than max, its first and last max/2 bytes are kept, with
// "…[cut; N bytes in all]…" between them. The cuts fall between
// characters and escapes, so the result is valid JSON. Abridge scans the
// bytes rather than decoding them, so a large value is not copied: raw
// that is not JSON comes back as it is.
func Abridge(raw json.RawMessage, max int) (json.RawMessage, bool) {
	return abridge(raw, max, max)
}

// CountRuns returns raw (JSON) with the runs of every string counted as
// Abridge counts them, and nothing cut: for a person to read (airlock log's
// table), where blanks would push the rest out of view.
func CountRuns(raw json.RawMessage) json.RawMessage {
	out, _ := abridge(raw, minRun, math.MaxInt)
	return out
}

// abridge abridges each string literal of raw longer than over, cutting
// what is left of it to keep.
func abridge(raw json.RawMessage, over, keep int) (json.RawMessage, bool) {
	if len(raw) <= over {
		return raw, false
	}
	var out []byte
	done := 0 // raw[:done] is in out
	for i := 0; i < len(raw); {
		if raw[i] != '"' {
			i++
			continue
		}
		j := i + 1 // find the closing quote
		for j < len(raw) && raw[j] != '"' {
			if raw[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(raw) {
			return raw, false // not JSON after all: leave it to the encoder
		}
		if lit := raw[i+1 : j]; len(lit) > over {
			if out == nil {
				out = make([]byte, 0, min(len(raw), 2*min(keep, len(raw))+256))
			}
			out = append(out, raw[done:i+1]...)
			out = abridgeString(out, lit, keep)
			done = j
		}
		i = j + 1
	}
	if out == nil {
		return raw, false
	}
	out = append(out, raw[done:]...)
	return out, string(out) != string(raw)
}

// AbridgeText is Abridge for plain text: s with its runs counted and its
// middle cut as a string argument longer than max would be.
func AbridgeText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	b, _ := json.Marshal(s)
	short, cut := Abridge(b, max)
	var v string
	if !cut || json.Unmarshal(short, &v) != nil {
		return s
	}
	return v
}

// abridgeString appends the abridged form of lit, the inside of a JSON
// string literal, to out: the runs counted, then the middle cut if it is
// still longer than max. It walks lit once, keeping the head and the last
// pieces seen, and copies nothing but what it keeps; only a string that
// its counts make short enough is walked again, to keep all of it.
func abridgeString(out, lit []byte, max int) []byte {
	head := max / 2
	keepTail := max - head
	start := len(out)
	total := 0      // the length of the pieces so far
	closed := false // the head is complete
	// trail holds the last pieces after the head, enough to make up
	// keepTail bytes.
	var trail []piece
	runs(lit, func(b []byte, text bool) {
		at := total
		total += len(b)
		if !closed {
			if total <= head {
				out = append(out, b...)
				return
			}
			if text { // cut between characters or escapes
				out = append(out, b[:boundary(b, head-at, false)]...)
			}
			closed = true
		}
		p := piece{text: b, at: at}
		if !text { // the count's buffer is reused: keep a copy
			p.text, p.n = nil, copy(p.note[:], b)
		}
		trail = append(trail, p)
		drop := 0
		for drop+1 < len(trail) && total-trail[drop+1].at >= keepTail {
			drop++
		}
		if drop > 0 {
			trail = append(trail[:0], trail[drop:]...)
		}
	})
	if total <= max {
		out = out[:start]
		runs(lit, func(b []byte, _ bool) { out = append(out, b...) })
		return out
	}
	out = append(out, "…[cut; "+strconv.Itoa(len(lit))+" bytes in all]…"...)
	tail := total - keepTail
	for _, p := range trail {
		b := p.text
		if b == nil {
			b = p.note[:p.n]
		}
		switch {
		case p.at >= tail:
			out = append(out, b...)
		case p.at+len(b) > tail && p.text != nil: // cut between characters or escapes
			out = append(out, b[boundary(b, tail-p.at, true):]...)
		}
	}
	return out
}

// A piece is text of a string literal (text), or a count (note[:n]), that
// starts at offset at of the abridged string before any cut.
type piece struct {
	text []byte
	note [64]byte
	n    int
	at   int
}

// boundary returns the offset in text (characters and escapes of a JSON
// string literal, from the start of one) of the last boundary between them
// at or before n, or with up the first at or after n.
func boundary(text []byte, n int, up bool) int {
	i := 0
	for i < len(text) {
		w := 1
		if c := text[i]; c >= utf8.RuneSelf || c == '\\' {
			_, w = unit(text[i:])
		}
		if i+w > n {
			if up && i < n {
				return i + w
			}
			return i
		}
		i += w
	}
	return i
}

// textChunk is about the longest piece of text runs emits at once.
const textChunk = 4 << 10

// runs calls emit with lit, the inside of a JSON string literal, in
// pieces: text as it is (text true; cut into pieces of about textChunk
// bytes, between characters or escapes), and each run of at least minRun
// blanks or of one character as its count.
func runs(lit []byte, emit func(piece []byte, text bool)) {
	var note []byte
	start := 0 // the text not yet emitted starts here
	for i := 0; i < len(lit); {
		if i-start >= textChunk {
			emit(lit[start:i], true)
			start = i
		}
		if c := lit[i]; c > ' ' && c < 0x7f && c != '\\' {
			// Printable ASCII, most of any text: a run is of c itself.
			j := i + 1
			for j < len(lit) && lit[j] == c {
				j++
			}
			if j-i < minRun {
				i = j
				continue
			}
		}
		r, n := unit(lit[i:])
		b := blank(r)
		j, k := i+n, 1
		for j < len(lit) {
			r2, n2 := unit(lit[j:])
			if b && !blank(r2) || !b && r2 != r {
				break
			}
			j, k = j+n2, k+1
		}
		if k >= minRun {
			if start < i {
				emit(lit[start:i], true)
			}
			note = append(note[:0], "…["...)
			note = strconv.AppendInt(note, int64(k), 10)
			if b {
				note = append(note, " blanks]…"...)
			} else {
				note = append(note, "× "...)
				note = append(note, lit[i:i+n]...)
				note = append(note, "]…"...)
			}
			emit(note, false)
			start = j
		}
		i = j
	}
	if start < len(lit) {
		emit(lit[start:], true)
	}
}

// unit decodes the character or escape at the start of lit, the inside of
// a JSON string literal, and returns it and its length in lit. A byte that
// is not UTF-8, or an escape cut short, is one U+FFFD of its own length.
func unit(lit []byte) (rune, int) {
	if c := lit[0]; c < utf8.RuneSelf && c != '\\' {
		return rune(c), 1
	} else if c != '\\' {
		return utf8.DecodeRune(lit)
	}
	if len(lit) < 2 {
		return utf8.RuneError, 1
	}
	switch lit[1] {
	case 'u':
		r, ok := hex4(lit[2:])
		if !ok {
			return utf8.RuneError, min(len(lit), 6)
		}
		if r >= 0xd800 && r < 0xdc00 && len(lit) >= 12 && lit[6] == '\\' && lit[7] == 'u' {
			if lo, ok := hex4(lit[8:]); ok && lo >= 0xdc00 && lo < 0xe000 {
				return 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00), 12
			}
		}
		return r, 6
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	}
	return rune(lit[1]), 2
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[:4]), 16, 16)
	return rune(v), err == nil
}

// blank reports whether r shows as nothing, or as space: white space,
// control characters, invisible format characters (zero-width spaces,
// bidirectional controls, tags) and the fillers that render empty.
func blank(r rune) bool {
	if r < utf8.RuneSelf {
		return r <= ' ' || r == 0x7f
	}
	switch r {
	case 0x115f, 0x1160, 0x2800, 0x3164, 0xffa0:
		return true
	}
	return unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}
