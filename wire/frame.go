// Package wire is the contract between the broker and the runner: length-prefixed
// JSON frames, the ToolInput and ToolOutput messages they carry, strict decoding,
// and the runner's exit codes. Both sides import it; it depends only on the
// standard library.
//
// A frame is a 4-byte big-endian length N followed by N bytes of UTF-8 JSON.
// N = 0 and N > MaxFrameSize are errors reported before anything of that size
// is allocated, so a desynchronised or hostile writer cannot make a reader
// allocate more than MaxFrameSize.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MaxFrameSize is the largest frame payload either side accepts (64 MiB).
const MaxFrameSize = 64 << 20

// SandboxOutputBytes is how much a tool call's sandbox may write to its
// stdout, where the runner writes the result's frame, for a call whose
// content is capped at output bytes: twice the cap (JSON escapes a
// content's quotes, backslashes and line ends) and 64 KiB for the frame
// around it, at least 1 MiB. The broker kills a sandbox past it, so the
// runner cuts a content whose escapes would not fit.
func SandboxOutputBytes(output int64) int64 { return max(output*2+64<<10, 1<<20) }

// Frame errors that callers branch on.
var (
	// ErrEmptyFrame is returned for a frame whose length prefix is zero.
	ErrEmptyFrame = errors.New("wire: frame length is 0")
	// ErrFrameTooLarge is returned for a frame whose length prefix exceeds MaxFrameSize.
	ErrFrameTooLarge = errors.New("wire: frame length exceeds 64 MiB")
	// ErrShortFrame is returned when the stream ends inside a frame.
	ErrShortFrame = errors.New("wire: stream ended inside a frame")
)

// WriteFrame writes payload as one frame. It refuses an empty or oversize payload.
func WriteFrame(w io.Writer, payload []byte) error {
	if len(payload) == 0 {
		return ErrEmptyFrame
	}
	if len(payload) > MaxFrameSize {
		return fmt.Errorf("%w (%d bytes)", ErrFrameTooLarge, len(payload))
	}
	buf := make([]byte, 4+len(payload))
	binary.BigEndian.PutUint32(buf, uint32(len(payload)))
	copy(buf[4:], payload)
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("writing frame: %w", err)
	}
	return nil
}

// ReadFrame reads one frame and returns its payload. A clean end of stream
// before the first header byte returns io.EOF; any other short read returns
// ErrShortFrame. The payload is read in bounded chunks, so a length prefix that
// lies about the size costs at most what the writer actually sent.
func ReadFrame(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	n, err := io.ReadFull(r, hdr[:])
	switch {
	case n == 0 && errors.Is(err, io.EOF):
		return nil, io.EOF
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("%w: header has %d of 4 bytes", ErrShortFrame, n)
	case err != nil:
		return nil, fmt.Errorf("reading frame header: %w", err)
	}
	size := binary.BigEndian.Uint32(hdr[:])
	if size == 0 {
		return nil, ErrEmptyFrame
	}
	if size > MaxFrameSize {
		return nil, fmt.Errorf("%w (header says %d bytes)", ErrFrameTooLarge, size)
	}
	// Grow the buffer as data arrives rather than trusting the header.
	const chunk = 1 << 20
	buf := make([]byte, 0, min(int(size), chunk))
	for len(buf) < int(size) {
		want := min(int(size)-len(buf), chunk)
		if cap(buf)-len(buf) < want {
			nb := make([]byte, len(buf), min(int(size), 2*cap(buf)+want))
			copy(nb, buf)
			buf = nb
		}
		m, err := io.ReadFull(r, buf[len(buf):len(buf)+want])
		buf = buf[:len(buf)+m]
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("%w: payload has %d of %d bytes", ErrShortFrame, len(buf), size)
			}
			return nil, fmt.Errorf("reading frame payload: %w", err)
		}
	}
	return buf, nil
}
