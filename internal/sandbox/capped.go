package sandbox

import (
	"errors"
	"io"
	"time"
)

// CopyCapped copies src to dst until src ends or limit bytes have been copied.
// When src holds more than limit bytes it calls onLimit once (typically to kill
// the sandbox), stops writing, and keeps draining src without storing it so
// the writer is never blocked on a full pipe. When dst fails (its reader went
// away: `airlock exec -- yes | head -1`), src is closed if it is an
// io.Closer and the copy ends, so that the writer meets the broken pipe as
// it would writing to dst itself (os/exec does the same); a src that cannot
// be closed is drained instead. It returns the bytes written to dst and
// whether the limit was hit. A nil dst discards.
func CopyCapped(dst io.Writer, src io.Reader, limit int64, onLimit func()) (written int64, truncated bool, err error) {
	if dst == nil {
		dst = io.Discard
	}
	buf := make([]byte, 32<<10)
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if room := limit - written; int64(len(chunk)) > room {
				chunk = chunk[:max(room, 0)]
				if !truncated {
					truncated = true
					if onLimit != nil {
						onLimit()
					}
				}
			}
			if len(chunk) > 0 {
				w, werr := dst.Write(chunk)
				written += int64(w)
				if errors.Is(werr, ErrAbandoned) {
					// The abandoned write may still read chunk.
					buf = make([]byte, len(buf))
				}
				if werr != nil && err == nil {
					err = werr
					if c, ok := src.(io.Closer); ok {
						_ = c.Close()
						return written, truncated, err
					}
					dst = io.Discard
				}
			}
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrClosedPipe) {
				return written, truncated, err
			}
			if err == nil && !truncated {
				err = rerr
			}
			return written, truncated, err
		}
	}
}

// OutputGrace is how long the output a command killed for its time limit
// left in its pipes may take to reach a reader that does not read, before
// a backend abandons it (Abandonable) and the call ends.
const OutputGrace = 2 * time.Second

// ErrAbandoned is what a writer made by Abandonable returns once its stop
// has closed.
var ErrAbandoned = errors.New("the output's reader stopped reading: the rest of the output was dropped")

// Abandonable returns a writer that writes to dst until stop closes, and
// from then on fails with ErrAbandoned at once, a write blocked in dst
// included: a caller told to end (a kill) must not wait for ever on a
// reader that stays but does not read. The write blocked then goes on
// alone, with a copy of the slice it was given (io.Writer's contract: the
// caller's buffer, perhaps pooled, may hold another call's output by then).
// A writer whose writes never wait on a reader (a regular file, /dev/null)
// is returned as it is.
func Abandonable(dst io.Writer, stop <-chan struct{}) io.Writer {
	if dst == nil {
		dst = io.Discard
	}
	if neverWaits(dst) {
		return dst
	}
	return &abandonable{dst: dst, stop: stop}
}

type abandonable struct {
	dst  io.Writer
	stop <-chan struct{}
}

type writeResult struct {
	n   int
	err error
}

func (a *abandonable) Write(p []byte) (int, error) {
	select {
	case <-a.stop:
		return 0, ErrAbandoned
	default:
	}
	done := make(chan writeResult, 1)
	own := append([]byte(nil), p...)
	go func() {
		n, err := a.dst.Write(own)
		done <- writeResult{n, err}
	}()
	select {
	case r := <-done:
		return r.n, r.err
	case <-a.stop:
		return 0, ErrAbandoned
	}
}
