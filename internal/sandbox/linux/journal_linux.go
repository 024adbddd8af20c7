package linux

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/sandbox/journal"
)

// journalDir is where, below Options.StateDir, each process journals the
// placeholders it may create: one file per process, named by its
// procid.ID, holding one host path a line. A line is written before the
// placeholder is made; the file is emptied whenever the process holds no
// placeholder and removed by a later process once its writer is dead,
// after removing every journalled placeholder still there, empty and
// marked. So kill -9 of a broker leaves no placeholder for longer than
// the next start of airlock over the same state directory.
const journalDir = ".placeholders"

// note journals paths (host paths) before any is created. It is called
// with p.mu held. A journal that cannot be written is not a reason to
// refuse the call: the placeholders are still removed by this process.
func (p *placeholders) note(paths []string) {
	if p.journalDir == "" || len(paths) == 0 {
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
	journalUsers.Lock()
	defer journalUsers.Unlock()
	name := p.journal.Name()
	if !p.journalling {
		p.journalling = true
		journalUsers.n[name]++
	}
	// Each path once until the journal is emptied: while any set of this
	// process holds a placeholder, every hold of the others would write its
	// paths again, and the journal grew by the call.
	noted := journalUsers.noted[name]
	if noted == nil {
		noted = map[string]bool{}
		journalUsers.noted[name] = noted
	}
	var fresh []string
	var lines strings.Builder
	for _, path := range paths {
		if !noted[path] {
			fresh = append(fresh, path)
			lines.WriteString(journal.Line(path) + "\n")
		}
	}
	if len(fresh) == 0 {
		return
	}
	if _, err := p.journal.WriteString(lines.String()); err == nil {
		for _, path := range fresh {
			noted[path] = true
		}
	}
}

// journalUsers counts, for each journal file of this process, the sets of
// placeholders that noted paths in it since they last held none: the
// backends of one process over one state directory share the file (it is
// named by the process), so it is emptied only when none of them holds a
// placeholder. It keeps, for each file, the paths written there since it
// was last emptied (noted). Writes and the emptying are made under its
// lock.
var journalUsers = struct {
	sync.Mutex
	n     map[string]int
	noted map[string]map[string]bool
}{n: map[string]int{}, noted: map[string]map[string]bool{}}

// forget empties the journal once no set of placeholders of this process
// that writes there holds one. It is called with p.mu held.
func (p *placeholders) forget() {
	if p.journal == nil || len(p.refs) != 0 || !p.journalling {
		return
	}
	journalUsers.Lock()
	defer journalUsers.Unlock()
	p.journalling = false
	name := p.journal.Name()
	if journalUsers.n[name]--; journalUsers.n[name] > 0 {
		return
	}
	delete(journalUsers.n, name)
	delete(journalUsers.noted, name)
	_ = p.journal.Truncate(0)
}

// sweepJournals removes the placeholders journalled by processes that are
// gone, and their journals.
func sweepJournals(dir string, log *slog.Logger) { journal.SweepDead(dir, removePlaceholder, log) }

// removeJournalled removes each placeholder a journal names that is still
// a placeholder: marked, empty, not a symlink.
func removeJournalled(path string) (int, error) { return journal.Remove(path, removePlaceholder) }

// removePlaceholder removes host path p if it is one of airlock's
// placeholders (it carries the mark, or the temporary name one is made
// under, and is an empty file or directory) and
// no live airlock process holds it (their shared flock).
func removePlaceholder(p string) bool {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	ours := marked(f) || strings.HasPrefix(filepath.Base(p), tempPrefix)
	if !ours || !untouchedFile(f, placeholderName(filepath.Base(p))) || flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		return false
	}
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	if cur, err := os.Lstat(p); err != nil || !os.SameFile(fi, cur) {
		return false
	}
	if fi.IsDir() {
		return unix.Rmdir(p) == nil // fails when not empty
	}
	return unix.Unlink(p) == nil
}

// placeholderName is the name a placeholder at base is for: base itself,
// or, for a temporary name (tempName: the prefix, PID[-START].N-, the
// name or, for a long one, its digest), the name it was made for (or the
// digest, which no placeholder with content has).
func placeholderName(base string) string {
	rest, ok := strings.CutPrefix(base, tempPrefix)
	if !ok {
		return base
	}
	i := strings.Index(rest, ".")
	if i < 0 {
		return rest
	}
	j := strings.Index(rest[i:], "-")
	if j < 0 {
		return rest
	}
	return rest[i+j+1:]
}
