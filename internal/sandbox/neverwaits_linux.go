package sandbox

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// neverWaits reports whether a write to w returns without waiting on a
// reader: a regular file, or a character device that is not a terminal
// (/dev/null). Abandonable writes to those in the caller's goroutine, as
// a plain write would: handing each write to a goroutine of its own
// cost a third of airlock exec's output rate into a file.
// A writer that passes every write on to another whole (Unwrap) is
// judged by that one; nil is io.Discard's.
func neverWaits(w io.Writer) bool {
	for range 8 {
		u, ok := w.(interface{ Unwrap() io.Writer })
		if !ok {
			break
		}
		if w = u.Unwrap(); w == nil {
			return true
		}
	}
	if w == io.Discard {
		return true
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	switch m := fi.Mode(); {
	case m.IsRegular():
		return true
	case m&os.ModeCharDevice != 0:
		rc, err := f.SyscallConn()
		if err != nil {
			return false
		}
		terminal := true
		if err := rc.Control(func(fd uintptr) {
			_, terr := unix.IoctlGetTermios(int(fd), unix.TCGETS)
			terminal = terr == nil
		}); err != nil {
			return false
		}
		return !terminal
	}
	return false
}
