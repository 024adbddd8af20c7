package podman

import (
	"log/slog"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/sandbox/journal"
)

// journalDir is where, below the backend's state directory, each process
// journals the placeholders it makes in the user's trees: one file per
// process, named by its procid.ID, one host path a line, written before
// the placeholder is made and emptied whenever the process holds none. A
// later backend over the same state directory removes, for each journal
// whose process is gone, every placeholder it names that is still one
// (marked, empty, not a symlink), then the journal: so kill -9 of a broker
// leaves no placeholder in a tree past the next start.
const journalDir = ".podman-placeholders"

// note journals host before its placeholder is made. A journal that cannot
// be written does not refuse the call: this process still removes what it
// made.
func (p *placeholders) note(host string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.journalDir == "" {
		return
	}
	if p.journal == nil {
		if err := os.MkdirAll(p.journalDir, 0o700); err != nil {
			return
		}
		f, err := os.OpenFile(filepath.Join(p.journalDir, journal.Name()), os.O_WRONLY|os.O_CREATE|os.O_APPEND|unix.O_NOFOLLOW, 0o600)
		if err != nil {
			return
		}
		p.journal = f
	}
	_, _ = p.journal.WriteString(journal.Line(host) + "\n")
}

// mark sets the placeholder mark on the open file fd (best effort: a file
// system without user extended attributes leaves it unmarked, and then no
// later start removes it, since nothing proves it airlock's).
func mark(fd int) { _ = unix.Fsetxattr(fd, grant.PlaceholderXattr, []byte("1"), 0) }

// sweepPlaceholders removes the placeholders journalled below state by
// processes that are gone, and their journals.
func sweepPlaceholders(state string, log *slog.Logger) {
	journal.SweepDead(filepath.Join(state, journalDir), removePlaceholder, log)
}

// removePlaceholder removes host path p if it is a placeholder: it carries
// the mark, is an empty file or an empty directory, and is what the name
// still is (never through a symlink).
func removePlaceholder(p string) bool {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var buf [8]byte
	if n, err := unix.Fgetxattr(fd, grant.PlaceholderXattr, buf[:]); err != nil || n == 0 {
		return false
	}
	var st, cur unix.Stat_t
	if unix.Fstat(fd, &st) != nil || unix.Lstat(p, &cur) != nil || st.Dev != cur.Dev || st.Ino != cur.Ino {
		return false
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return unix.Rmdir(p) == nil // fails when not empty
	}
	return st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size == 0 && unix.Unlink(p) == nil
}

// closeJournal closes the journal, and removes it when it names no
// placeholder still held (a later start sweeps it otherwise).
func (p *placeholders) closeJournal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.journal == nil {
		return
	}
	if len(p.refs) == 0 {
		_ = os.Remove(p.journal.Name())
	}
	_ = p.journal.Close()
	p.journal = nil
}
