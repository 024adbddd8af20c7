// Package journal reads the placeholder journals sandbox backends keep:
// one file per process, named by its procid.ID, one host path a line,
// written before each placeholder is made. A later process removes what
// a dead one journalled (SweepDead), through the backend's own test of
// what is still a placeholder.
package journal

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/airlockhq/airlock/internal/procid"
)

// Remove applies remove to each clean absolute path the journal names,
// once each, deepest first (so a placeholder directory is empty once its
// children are gone), and returns how many it removed.
func Remove(journal string, remove func(path string) bool) (int, error) {
	f, err := os.Open(journal)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	// Lines of any length: a path is as long as the tree is deep, and a
	// sandbox makes the tree (a nested repository more than 64 KiB of path
	// down is protected, so journalled). bufio.Scanner's limit on a line
	// stopped the reading there, and nothing the journal named was
	// removed, in any tree.
	var paths []string
	rd := bufio.NewReader(f)
	for {
		line, err := rd.ReadString('\n')
		if p, ok := parseLine(strings.TrimSuffix(line, "\n")); ok && filepath.IsAbs(p) && filepath.Clean(p) == p {
			paths = append(paths, p)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("reading %s: %w", journal, err)
		}
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	slices.SortStableFunc(paths, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	n := 0
	for _, p := range paths {
		if remove(p) {
			n++
		}
	}
	return n, nil
}

// Line is the line of a journal that names path: the path as it is, or
// quoted as Go quotes a string (strconv.Quote) where it holds a newline.
// A sandbox names directories (a nested repository's hooks directory, in
// its configuration), and a name with a newline in it made the line two
// paths, neither the placeholder's: a sweep left that one in the tree, and
// looked at the second, an absolute path the sandbox chose anywhere on the
// host. An absolute path begins with a slash, so a quoted line is told
// from it by its first byte.
func Line(path string) string {
	if strings.Contains(path, "\n") {
		return strconv.Quote(path)
	}
	return path
}

// parseLine is the path a journal's line names (Line), and whether it
// names one.
func parseLine(line string) (string, bool) {
	if !strings.HasPrefix(line, `"`) {
		return line, true
	}
	p, err := strconv.Unquote(line)
	return p, err == nil
}

// Name is the name of this process's journal: its procid.ID and, where
// it is known, its PID namespace (procid.Space), "ID.SPACE". A process in
// another PID namespace over the same state directory (a broker in a
// container sharing the user's home) cannot look this one's pid up, and
// took it for dead: it removed this live process's journal, and the
// placeholders it then held outlived a kill -9 of it, named by no journal.
func Name() string {
	if space := procid.Space(); space != "" {
		return string(procid.Self()) + "." + space
	}
	return string(procid.Self())
}

// SweepDead removes, through remove, the placeholders journalled in dir
// by processes that are gone, and then their journals. A journal of
// another PID namespace (Name) is left alone: whether its writer runs
// cannot be told from here. One whose name gives no namespace is judged
// by its pid as before.
func SweepDead(dir string, remove func(path string) bool, log *slog.Logger) {
	SweepDeadOf(dir, "placeholders", remove, log)
}

// SweepDeadOf is SweepDead for journals of other things than
// placeholders (what names them in the log): the cgroup directories
// under which a sandbox backend made its sandboxes' cgroups, for one.
func SweepDeadOf(dir, what string, remove func(path string) bool, log *slog.Logger) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	here := procid.Space()
	for _, e := range ents {
		name, space, spaced := strings.Cut(e.Name(), ".")
		id := procid.ID(name)
		if !e.Type().IsRegular() || id.PID() == 0 || spaced && space != here || id.Alive() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		n, err := Remove(path, remove)
		if err != nil {
			log.Debug("sweeping "+what, "journal", path, "err", err)
			continue
		}
		if n > 0 {
			log.Info("removed "+what+" a dead airlock process left", "count", n, "pid", id.PID())
		}
		_ = os.Remove(path)
	}
}
