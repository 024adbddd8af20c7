package podman

import (
	"bufio"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/procid"
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
		f, err := os.OpenFile(filepath.Join(p.journalDir, string(procid.Self())), os.O_WRONLY|os.O_CREATE|os.O_APPEND|unix.O_NOFOLLOW, 0o600)
		if err != nil {
			return
		}
		p.journal = f
	}
	_, _ = p.journal.WriteString(host + "\n")
}

// mark sets the placeholder mark on the open file fd (best effort: a file
// system without user extended attributes leaves it unmarked, and then no
// later start removes it, since nothing proves it airlock's).
func mark(fd int) { _ = unix.Fsetxattr(fd, grant.PlaceholderXattr, []byte("1"), 0) }

// sweepPlaceholders removes the placeholders journalled below state by
// processes that are gone, and their journals.
func sweepPlaceholders(state string, log *slog.Logger) {
	dir := filepath.Join(state, journalDir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		id := procid.ID(e.Name())
		if !e.Type().IsRegular() || id.PID() == 0 || id.Alive() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if n := removeJournalled(path); n > 0 {
			log.Info("removed placeholders a dead airlock process left", "count", n, "pid", id.PID())
		}
		_ = os.Remove(path)
	}
}

// removeJournalled removes each placeholder a journal names that is still
// a placeholder, deepest first, and returns how many.
func removeJournalled(journal string) int {
	f, err := os.Open(journal)
	if err != nil {
		return 0
	}
	defer f.Close()
	var paths []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if p := sc.Text(); cleanAbs(p) {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	slices.SortStableFunc(paths, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	n := 0
	for _, p := range paths {
		if removePlaceholder(p) {
			n++
		}
	}
	return n
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
