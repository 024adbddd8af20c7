package linux

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/procid"
	"github.com/airlockhq/airlock/internal/sandbox/linux/eintr"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
	"github.com/airlockhq/airlock/wire"
)

// placeholderXattr marks a placeholder airlock created, so any airlock
// process may remove it once nobody uses it (and grant's scan does not take
// a placeholder .git for a repository).
const placeholderXattr = grant.PlaceholderXattr

// placeholders manages the empty directories the backend creates on the host
// for protected paths that do not exist yet (.git/hooks, .bashrc, .vscode,
// ...), so that the init can mount them read-only and the sandbox cannot
// create them. They are created on the host before the sandbox is
// protected: before a cold sandbox starts, and when a call claims a warm
// one (a waiting warm sandbox holds none; the inodes of its file
// placeholders are made ahead, unnamed: spare_linux.go).
//
// Sharing, within a process and across processes:
//   - every sandbox that relies on a placeholder holds it; this process keeps
//     one open descriptor per placeholder with a shared flock(2) for as long
//     as any of its sandboxes holds it;
//   - a placeholder is removed only by a process that gets the exclusive lock
//     (so no other airlock process is using it), only if it is still empty,
//     and only if it carries the placeholderXattr mark (a user's own empty
//     directory is never removed);
//   - after taking the shared lock a holder checks that the path still names
//     the directory it locked, and starts again if a remover got there first.
//
// Where the filesystem has no user extended attributes, placeholders are
// unmarked: the creating process still removes them, but another process
// cannot tell them from a user's directory and does not lock them.
type placeholders struct {
	mu   sync.Mutex
	refs map[string]*heldDir // host path -> this process's hold
	// journalDir, when set, is where this process journals the
	// placeholders it may create (see journal_linux.go); journal is its
	// open journal file.
	journalDir string
	journal    *os.File
	// journalling: this set noted paths in the journal since it last
	// held no placeholder (see journalUsers).
	journalling bool
	// tag names this set of placeholders in their temporary names
	// (tempName): the process's id and a number of its own, since a
	// process may run several backends, each with its own set, whose
	// holds run at once.
	tag string

	// depot keeps placeholders between calls (depot_linux.go).
	depot depot
	// log, when set, gets what a release could not put right.
	log *slog.Logger

	// Spare inodes for file placeholders, made ahead (spare_linux.go).
	spares     map[dirID]*spareDir
	noSpares   map[dirID]bool // directories whose file system cannot make them
	linkWay    linkWay
	sparesOff  bool   // the backend is closed
	spareClock uint64 // counts stockings, for dropOldestSpares
	spareGen   uint64 // counts dropSpares: a stocking begun before one keeps nothing
}

// placeholderSets numbers the sets of placeholders of this process.
var placeholderSets atomic.Uint64

// heldDir is this process's hold on one placeholder.
type heldDir struct {
	n       int  // sandboxes of this process holding it (0: a release is removing it)
	fd      int  // the placeholder, open, with a shared flock
	created bool // this process created it
	raw     bool // made in a directory where its calls may be raw (rawDir), so its close may be too
	// own: it was there, unmarked or not empty: the user's own, or
	// another process's placeholder in the moment between its creation
	// and its mark. It is locked all the same, so that process cannot
	// remove it while a sandbox of this one relies on it, but it is not
	// listed as a placeholder, and removed only if it is one by then.
	own bool
	// parent is the directory it was found or made in, so a release finds
	// it there after the tree was moved (removeHeld).
	parent dirID
}

// hold makes sure that, for each denied or read-only path of cfg inside a
// writable mount, every missing directory up to it exists as a placeholder
// directory and the path itself as a placeholder of its kind (a directory
// for cfg.ReadOnlyDirs, an empty file otherwise), and counts this sandbox
// as holding each placeholder it relies on. It returns what to pass to
// release, and sets cfg.Placeholders to the sandbox paths of every
// placeholder held. Placeholders are created through os.Root, so a symlink
// in the tree cannot lead the backend outside the mount.
func (p *placeholders) hold(cfg *initproto.Config) ([]string, error) {
	held, _, err := p.holdCounting(cfg)
	return held, err
}

// holdStats counts where the placeholders a hold made came from.
type holdStats struct {
	spares int // spares named (prepare)
	depot  int // moved from the depot
}

// holdCounting is hold, and also says where the placeholders it made came
// from.
func (p *placeholders) holdCounting(cfg *initproto.Config) (held []string, n holdStats, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refs == nil {
		p.refs = map[string]*heldDir{}
	}
	cfg.Placeholders = nil
	if p.tag == "" {
		p.tag = string(procid.Self()) + "." + strconv.FormatUint(placeholderSets.Add(1), 10)
	}
	// Placeholders go in writable mounts only (entryMount): a sandbox of
	// a tool that changes nothing needs none, and its claim need not
	// look at each of the grant's paths to find that out.
	if !slices.ContainsFunc(cfg.Mounts, func(m initproto.Mount) bool { return m.Writable }) {
		return nil, n, nil
	}
	p.note(p.candidates(cfg))
	roots := map[string]*os.Root{} // one per writable mount
	dirs := map[string]*openDir{}  // the directories placeholders go in, by host path, each opened once
	ids := map[int]dirID{}         // their identities, by descriptor, each read once
	defer func() {
		for _, d := range dirs {
			d.f.Close()
		}
		for _, r := range roots {
			r.Close()
		}
	}()
	paths := append(slices.Clone(cfg.Masks), cfg.ReadOnly...)
	for _, ro := range paths {
		m, ok := entryMount(cfg.Mounts, ro)
		if !ok {
			continue
		}
		leafDir := placeholderIsDir(cfg, paths, ro)
		root := roots[m.Source]
		if root == nil {
			r, err := os.OpenRoot(m.Source)
			if err != nil {
				return held, n, fmt.Errorf("opening %s for protected paths: %w", m.Source, err)
			}
			root, roots[m.Source] = r, r
		}
		parts := strings.Split(m.Rel(ro), "/")
		for i := range parts {
			sub := strings.Join(parts[:i+1], "/")
			host := filepath.Join(m.Source, sub)
			if h := p.refs[host]; h != nil {
				h.n++
				held = append(held, host)
				if !h.own {
					cfg.Placeholders = append(cfg.Placeholders, filepath.Join(m.Target, sub))
				}
				continue
			}
			pd, err := parentDir(dirs, root, m.Source, parts[:i])
			if errors.Is(err, syscall.ENOTDIR) {
				break // a file of the user's stands above it: nothing can be created there
			}
			if err != nil {
				return held, n, fmt.Errorf("protected path %s: creating a placeholder: %w", host, err)
			}
			dir := i < len(parts)-1 || leafDir
			// An empty file placeholder may come from the depot or a spare;
			// a directory, or a file with content, is made each time.
			plainFile := !dir && len(wire.PlaceholderContent(parts[i])) == 0
			var h *heldDir
			exists := false
			if plainFile {
				h, exists = p.take(pd, parts[i])
			}
			if h != nil {
				n.depot++
			}
			if h == nil && !exists && plainFile {
				var fd int
				if fd, exists = p.linkSpare(pd, parts[i]); fd >= 0 {
					h = &heldDir{n: 1, fd: fd, created: true, raw: pd.raw}
					n.spares++
				}
			}
			if h == nil {
				h, err = lockPlaceholder(pd, parts[i], p.tempName(parts[i]), dir, exists)
			}
			if err != nil {
				return held, n, fmt.Errorf("protected path %s: %w", host, err)
			}
			if h == nil {
				break // not of the kind asked (a symlink, a file for a directory): the init binds or covers it
			}
			id, ok := ids[pd.fd]
			if !ok {
				var st unix.Stat_t
				if unix.Fstat(pd.fd, &st) == nil {
					id = dirID{uint64(st.Dev), st.Ino}
				}
				ids[pd.fd] = id
			}
			h.parent = id
			p.refs[host] = h
			held = append(held, host)
			if !h.own {
				cfg.Placeholders = append(cfg.Placeholders, filepath.Join(m.Target, sub))
			}
		}
	}
	slices.Sort(cfg.Placeholders)
	cfg.Placeholders = slices.Compact(cfg.Placeholders)
	return held, n, nil
}

// candidates lists the host paths hold may create placeholders at for cfg,
// those this process does not hold already, for the journal. It does no
// I/O: a path that turns out to be the user's own is journalled too, and
// harmless there, since a sweep removes only marked, empty, unheld
// placeholders.
func (p *placeholders) candidates(cfg *initproto.Config) []string {
	var out []string
	for _, ro := range append(slices.Clone(cfg.Masks), cfg.ReadOnly...) {
		m, ok := entryMount(cfg.Mounts, ro)
		if !ok {
			continue
		}
		parts := strings.Split(m.Rel(ro), "/")
		for i := range parts {
			host := filepath.Join(m.Source, strings.Join(parts[:i+1], "/"))
			if p.refs[host] == nil {
				out = append(out, host, filepath.Join(filepath.Dir(host), p.tempName(parts[i])))
			}
		}
	}
	return out
}

// openDir is a directory placeholders are made or removed in, open.
type openDir struct {
	f *os.File
	rawDir
}

// parentDir returns the directory beneath root (the mount at host path
// source) whose path from root is parts, opened through root once per
// hold (dirs caches it): placeholders are made and checked in it by name,
// so nothing but that directory's path is ever resolved, and that beneath
// root, as os.Root resolves it.
func parentDir(dirs map[string]*openDir, root *os.Root, source string, parts []string) (rawDir, error) {
	rel := "."
	if len(parts) > 0 {
		rel = strings.Join(parts, "/")
	}
	key := filepath.Join(source, rel)
	if d := dirs[key]; d != nil {
		return d.rawDir, nil
	}
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return rawDir{fd: -1}, err
	}
	d := &openDir{f: f, rawDir: newRawDir(int(f.Fd()))}
	dirs[key] = d
	return d.rawDir, nil
}

// lockPlaceholder creates (or finds) the placeholder name in the directory
// pd (made under the temporary name tmp: createPlaceholder, unless exists
// says name was just found taken), a directory when dir is set and an
// empty file otherwise, and takes a shared lock on it. What exists
// unmarked (or not empty) is held as own (see heldDir). It returns nil for
// what is not of the kind asked, which the init binds or covers as it is.
func lockPlaceholder(pd rawDir, name, tmp string, dir, exists bool) (*heldDir, error) {
	for attempt := 0; attempt < 8; attempt++ {
		// Most placeholders are missing: made marked and locked under a
		// temporary name, then moved into place.
		fd, cerr := -1, error(fs.ErrExist)
		if !exists || attempt > 0 {
			fd, cerr = createPlaceholder(pd, name, tmp, dir)
		}
		if cerr == nil {
			return &heldDir{n: 1, fd: fd, created: true, raw: pd.raw}, nil
		}
		// Else it is there (or something else is), or the file system
		// cannot move it into place without replacing: the checks below
		// tell which, and only then is it made in place.
		inPlace := errors.Is(cerr, errNoReplace)
		fd = -1
		var err error
		created := false
		if inPlace && !dir {
			fd, err = pd.openat(name, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
			created = err == nil
			if created {
				_ = writeContent(fd, name)
			}
		}
		if fd < 0 {
			var st unix.Stat_t
			err := unix.Fstatat(pd.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
			isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
			switch {
			case errors.Is(err, fs.ErrNotExist) && !inPlace:
				if errors.Is(cerr, fs.ErrExist) {
					continue // there a moment ago: removed under us
				}
				return nil, fmt.Errorf("creating a placeholder: %w", cerr)
			case errors.Is(err, fs.ErrNotExist):
				// Where the file system cannot rename without replacing:
				// made in place, and marked below.
				if dir {
					err = pd.mkdirat(name, 0o755)
				} else {
					var nfd int
					if nfd, err = pd.openat(name, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644); err == nil {
						fd = nfd
						_ = writeContent(fd, name)
					}
				}
				if err != nil && !errors.Is(err, fs.ErrExist) {
					return nil, fmt.Errorf("creating a placeholder: %w", err)
				}
				created = err == nil
			case errors.Is(err, syscall.ENOTDIR):
				return nil, nil // a file of the user's stands above it: nothing can be created there
			case err != nil:
				return nil, err
			case isDir != dir || (!dir && st.Mode&unix.S_IFMT != unix.S_IFREG):
				return nil, nil // the user's own; the init binds or covers it
			}
		}
		if fd < 0 {
			// O_NONBLOCK: what was a file a moment ago may be a FIFO now.
			// Not a raw call: an existing name may be the root of another
			// file system mounted there (a user's FUSE or network mount),
			// whose open can wait for its server indefinitely, and a raw
			// call keeps its P, so the next garbage collection would wait
			// with it (localFS tells only pd's file system).
			if fd, err = eintr.Value(func() (int, error) {
				return unix.Openat(pd.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
			}); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue // removed under us; start again
				}
				return nil, err
			}
		}
		own := !created && (!markedFD(fd) || !untouchedFD(fd, name))
		// Raw only for what this process made in pd: an existing name
		// may lead to another file system.
		raw := created && pd.raw
		if err := sharedLock(fd); err != nil {
			rawClose(raw, fd)
			return nil, err
		}
		if created {
			// Locked before it is marked: no remover takes an unmarked
			// placeholder, nor a locked one, so the one made here is
			// still at name and needs no check. Best effort: without user
			// xattrs the mark is simply absent.
			_ = rawFsetxattr(raw, fd, placeholderXattr, []byte("1"), 0)
			return &heldDir{n: 1, fd: fd, created: true, raw: raw}, nil
		}
		if sameFD(pd.fd, name, fd) {
			return &heldDir{n: 1, fd: fd, own: own}, nil
		}
		rawClose(raw, fd) // a remover got there first
	}
	return nil, errors.New("the placeholder kept changing under airlock")
}

// tempPrefix begins the name a placeholder is made under before it is
// moved to its own (createPlaceholder). A sweep removes a journalled name
// with it whether marked or not: nobody but airlock makes such a name.
const tempPrefix = wire.PlaceholderTempPrefix

// tempName is the name under which this set of placeholders makes the
// placeholder name: its tag, so no other process, nor another set of this
// one, makes the same one. p.mu is held, and p.tag set.
//
// A name too long to take the prefix and the tag too (a file system
// takes NAME_MAX bytes) ends in a digest of it instead: a sandbox chooses
// such a name (a nested repository it makes names its hooks directory,
// which later sessions hold while it is missing), and the temporary name
// the kernel refused failed every hold of every later call over the tree.
// Only a commondir's placeholder holds anything (placeholderName), and
// its name is short.
func (p *placeholders) tempName(name string) string {
	t := tempPrefix + p.tag + "-" + name
	if len(t) <= unix.NAME_MAX {
		return t
	}
	sum := sha256.Sum256([]byte(name))
	return tempPrefix + p.tag + "-" + hex.EncodeToString(sum[:16])
}

// errNoReplace: the file system cannot rename without replacing.
var errNoReplace = errors.New("renameat2 RENAME_NOREPLACE is not supported here")

// createPlaceholder makes the placeholder name in the directory pd (a
// directory when dir is set, else an empty file) under the temporary name
// tmp beside it (tempName: this set's own), marks it and takes the shared
// lock there, and only then moves it to name without replacing anything
// (renameat2 RENAME_NOREPLACE). So name never shows a placeholder without
// its mark, which a broker killed in between would leave behind as if it
// were the user's; the temporary name, journalled too (candidates), is
// removed by the next sweep. It returns the placeholder open, fs.ErrExist when name
// exists, and errNoReplace (the temporary name gone) where the file system
// cannot rename so.
func createPlaceholder(pd rawDir, name, tmp string, dir bool) (int, error) {
	flags := 0
	if dir {
		flags = unix.AT_REMOVEDIR
	}
	var fd int
	var err error
	if dir {
		err = pd.mkdirat(tmp, 0o755)
		if errors.Is(err, unix.EEXIST) {
			// Left by a failure of this set: it is ours.
			_ = pd.unlinkat(tmp, unix.AT_REMOVEDIR)
			err = pd.mkdirat(tmp, 0o755)
		}
		if err == nil {
			if fd, err = pd.openat(tmp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err != nil {
				_ = pd.unlinkat(tmp, flags)
			}
		}
	} else {
		open := func() (int, error) {
			return pd.openat(tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		}
		fd, err = open()
		if errors.Is(err, unix.EEXIST) {
			_ = pd.unlinkat(tmp, 0)
			fd, err = open()
		}
		if err == nil {
			if err = writeContent(fd, name); err != nil {
				_ = pd.unlinkat(tmp, 0)
				rawClose(pd.raw, fd)
			}
		}
	}
	if err != nil {
		return -1, err
	}
	removeTemp := func() {
		_ = pd.unlinkat(tmp, flags)
		rawClose(pd.raw, fd)
	}
	// Best effort: without user xattrs the mark is simply absent.
	_ = rawFsetxattr(pd.raw, fd, placeholderXattr, []byte("1"), 0)
	if err := sharedLock(fd); err != nil {
		removeTemp()
		return -1, err
	}
	err = pd.renameat2(tmp, name, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return fd, nil
	case errors.Is(err, unix.EEXIST):
		removeTemp()
		return -1, fs.ErrExist
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		removeTemp()
		return -1, errNoReplace
	default:
		removeTemp()
		return -1, fmt.Errorf("moving the placeholder into place: %w", err)
	}
}

// release drops this sandbox's hold on placeholders and removes those that
// no airlock process holds any more, deepest first, if they are still empty.
// It takes p.mu for one placeholder at a time, so a claim's hold never
// waits for more than one removal: it takes back (as its own, with no
// syscall) every placeholder this release has not removed yet.
func (p *placeholders) release(held []string) {
	type gone struct {
		host string
		h    *heldDir
	}
	var rm []gone
	p.mu.Lock()
	for i := len(held) - 1; i >= 0; i-- {
		if h := p.refs[held[i]]; h != nil {
			if h.n--; h.n == 0 {
				rm = append(rm, gone{held[i], h}) // in refs until removed
			}
		}
	}
	p.mu.Unlock()
	dirs := map[string]*openDir{} // parent directories, opened once (nil: could not be)
	for _, g := range rm {
		p.mu.Lock()
		if p.refs[g.host] == g.h && g.h.n == 0 {
			delete(p.refs, g.host)
			if (g.h.created || markedFD(g.h.fd)) && flock(g.h.fd, unix.LOCK_EX|unix.LOCK_NB) == nil {
				p.removeHeld(dirs, g.host, g.h)
			}
			rawClose(g.h.raw, g.h.fd) // the inode is freed here, if it was removed
		}
		p.mu.Unlock()
		if afterRemove != nil {
			afterRemove()
		}
	}
	for _, d := range dirs {
		if d != nil {
			d.f.Close()
		}
	}
	p.mu.Lock()
	p.forget()
	p.mu.Unlock()
}

// afterRemove, when set (by tests), runs after each placeholder a release
// has removed, with p.mu free.
var afterRemove func()

// removeHeld removes host, the placeholder fd holds with an exclusive lock,
// if the path still names it and it is empty: through its parent directory
// (opened once per release, in dirs), so nothing is followed but the
// parent's path, as os.OpenRoot would. A placeholder an airlock process
// made (created) it moves into the depot where the depot can take it
// (depot_linux.go); anything else it unlinks. p.mu is held.
func (p *placeholders) removeHeld(dirs map[string]*openDir, host string, h *heldDir) {
	fd, created := h.fd, h.created
	name := filepath.Base(host)
	var held unix.Stat_t
	if unix.Fstat(fd, &held) != nil {
		return
	}
	at := func(parent string) *openDir {
		d, ok := dirs[parent]
		if !ok {
			if f, err := os.OpenFile(parent, os.O_RDONLY|unix.O_DIRECTORY, 0); err == nil {
				d = &openDir{f: f, rawDir: newRawDir(int(f.Fd()))}
			}
			dirs[parent] = d
		}
		var cur unix.Stat_t
		if d == nil || unix.Fstatat(d.fd, name, &cur, unix.AT_SYMLINK_NOFOLLOW) != nil ||
			held.Dev != cur.Dev || held.Ino != cur.Ino {
			return nil
		}
		return d
	}
	d := at(filepath.Dir(host))
	if d == nil {
		// Not at its path: the tree (or a directory above it) may have
		// been moved while a sandbox held it. The kernel knows where the
		// held inode is now; it is taken there only under its own name and
		// in the very directory it was made or found in.
		now, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		if err != nil || now == host || !filepath.IsAbs(now) || filepath.Base(now) != name || h.parent == (dirID{}) {
			return // not the placeholder any more
		}
		if d = at(filepath.Dir(now)); d == nil {
			return
		}
		var pst unix.Stat_t
		if unix.Fstat(d.fd, &pst) != nil || (dirID{uint64(pst.Dev), pst.Ino}) != h.parent {
			return
		}
	}
	if held.Mode&unix.S_IFMT == unix.S_IFREG && !untouchedFD(fd, name) {
		return // written to: the user's now
	}
	if created && len(wire.PlaceholderContent(name)) == 0 && p.toDepot(d.rawDir, name, fd, &held) {
		return
	}
	switch held.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		_ = d.unlinkat(name, unix.AT_REMOVEDIR) // fails, and keeps it, if not empty
	case unix.S_IFREG:
		_ = d.unlinkat(name, 0) // untouched, checked above
	}
}

// lstatUnheld lstats path into st and reports whether it exists and is
// not a placeholder this process holds for a sandbox. It looks with p.mu
// held, so no hold or release of this process makes or removes the
// placeholder between the lstat and the look at what is held: a warm
// sandbox's record of the grant's paths (grantPaths) taken during a
// release would otherwise keep a placeholder as the user's file and see
// the tree changed, for nothing, when a call claims it.
func (p *placeholders) lstatUnheld(path string, st *unix.Stat_t) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if unix.Lstat(path, st) != nil {
		return false
	}
	return !p.holding(path, st)
}

// holding reports whether host path p, whose lstat is st, is a
// placeholder this process holds for a sandbox. p.mu is held.
func (p *placeholders) holding(path string, st *unix.Stat_t) bool {
	h := p.refs[path]
	if h == nil || h.own {
		return false
	}
	var hs unix.Stat_t
	return unix.Fstat(h.fd, &hs) == nil && hs.Dev == st.Dev && hs.Ino == st.Ino &&
		(st.Mode&unix.S_IFMT == unix.S_IFDIR || st.Size == int64(len(wire.PlaceholderContent(filepath.Base(path)))))
}

// marked reports whether f carries the placeholder mark.
func marked(f *os.File) bool { return markedFD(int(f.Fd())) }

// markedFD reports whether the open file fd carries the placeholder mark.
func markedFD(fd int) bool {
	var buf [8]byte
	n, err := unix.Fgetxattr(fd, placeholderXattr, buf[:])
	return err == nil && n > 0
}

// untouchedFile reports whether f, the placeholder named name, is a
// directory (removed only if empty) or a regular file that holds what a
// placeholder of that name is made with (PlaceholderContent): one someone
// wrote to is kept.
func untouchedFile(f *os.File, name string) bool { return untouchedFD(int(f.Fd()), name) }

// untouchedFD is untouchedFile of the open file fd.
func untouchedFD(fd int, name string) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return false
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return true
	}
	want := wire.PlaceholderContent(name)
	if st.Size != int64(len(want)) {
		return false
	}
	if len(want) == 0 {
		return true
	}
	got := make([]byte, len(want)+1)
	n, err := unix.Pread(fd, got, 0)
	return err == nil && bytes.Equal(got[:n], want)
}

// writeContent writes into fd, a file placeholder named name just made,
// what it holds (PlaceholderContent).
func writeContent(fd int, name string) error {
	c := wire.PlaceholderContent(name)
	if len(c) == 0 {
		return nil
	}
	if _, err := unix.Pwrite(fd, c, 0); err != nil {
		return fmt.Errorf("writing the placeholder's content: %w", err)
	}
	return nil
}

// sameFD reports whether name in the directory pd is still the
// placeholder fd holds (and not a symlink).
func sameFD(pd int, name string, fd int) bool {
	var cur, held unix.Stat_t
	if unix.Fstatat(pd, name, &cur, unix.AT_SYMLINK_NOFOLLOW) != nil || cur.Mode&unix.S_IFMT == unix.S_IFLNK {
		return false
	}
	return unix.Fstat(fd, &held) == nil && cur.Dev == held.Dev && cur.Ino == held.Ino
}

// flock locks the open file fd, retrying on EINTR.
func flock(fd, how int) error {
	return eintr.Retry(func() error { return unix.Flock(fd, how) })
}

// errLockedElsewhere: a protected path is locked exclusively by a process
// that does not let go.
var errLockedElsewhere = errors.New("another process holds an exclusive lock on it")

// sharedLockTries and sharedLockWait bound how long sharedLock waits for
// an exclusive lock to go: many short waits, growing to sharedLockWait.
const (
	sharedLockTries = 100
	sharedLockWait  = 20 * time.Millisecond
)

// sharedLock takes the shared lock of a placeholder (or of a protected
// path found in place) on fd, without ever waiting in the kernel. The
// only exclusive lock an airlock process takes on one is a remover's,
// held for a few system calls; anything else holding one is a process in
// the tree: a sandbox of another grant under which the name is writable,
// or one that kept a descriptor of the inode from when it was in the tree
// (it is in the depot or a tree again now), which can keep its lock for
// as long as it runs. A blocking flock(2) waited for it with p.mu held:
// no call of the backend started or ended until that sandbox did. So it
// is taken with LOCK_NB, tried again a while, and then refused.
func sharedLock(fd int) error {
	wait := 50 * time.Microsecond
	for range sharedLockTries {
		err := flock(fd, unix.LOCK_SH|unix.LOCK_NB)
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return err
		}
		time.Sleep(wait) //permit:time.Sleep (a backoff: flock cannot wait for the lock without blocking)
		wait = min(2*wait, sharedLockWait)
	}
	return errLockedElsewhere
}

// placeholderIsDir reports whether the denied or read-only path ro of cfg
// (one of paths, cfg's denied and read-only paths) is held as a directory
// when missing: by its kind, or because another held path lies below it.
func placeholderIsDir(cfg *initproto.Config, paths []string, ro string) bool {
	return slices.Contains(cfg.ReadOnlyDirs, ro) || slices.ContainsFunc(paths, func(o string) bool {
		return len(o) > len(ro) && o[len(ro)] == '/' && strings.HasPrefix(o, ro)
	})
}

// entryMount returns the mount whose tree holds the name p (the mount
// holding p's parent), when the sandbox can write there: where the host
// makes a placeholder for p, or removes one the init made. A name below a
// read-only grant nested in a writable one is the read-only grant's,
// whatever lies under it in the writable tree.
func entryMount(mounts []initproto.Mount, p string) (initproto.Mount, bool) {
	m, ok := initproto.Holding(mounts, filepath.Dir(p))
	return m, ok && m.Writable && p != m.Target
}
