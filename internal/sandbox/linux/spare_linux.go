package linux

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
	"github.com/airlockhq/airlock/wire"
)

// Spare file placeholders. Making a placeholder file is mostly the
// allocation of its inode, which on ext4 without a journal (where the
// allocator reads past every inode freed in the last minute) costs 40–90
// µs each, about 1–2.5 ms for the 27 file placeholders of a plain
// directory, on the claim's clock. So while a warm sandbox is built, the
// inodes its claim will need are made ahead, with no name anywhere
// (open(2) O_TMPFILE in the directory they will go in), already marked and
// share-locked; the claim only gives each its name (linkat(2), which fails
// if the name exists, so nothing is replaced). Nothing shows in the tree
// while a sandbox waits: an unnamed inode is freed when its descriptor is
// closed, and by the kernel if the process dies. Each spare becomes one
// placeholder, its own inode, as one made by name: the locking and removal
// (placeholder_linux.go) are the same. Directories cannot be made so and
// are still made at the claim.

// dirID names a directory by its inode, so a spare made in it goes only
// to a name in the same directory.
type dirID struct{ dev, ino uint64 }

// spareSets is how many claims' worth of spares are kept for each
// directory: the default pool keeps two sandboxes of a shape ready, and
// back to back the next claim comes while the last one's replacement is
// still being built (and stocking).
const spareSets = 2

// maxSpareDirs bounds the directories spares are kept for; a backend
// whose trees keep changing drops the oldest ones' spares.
const maxSpareDirs = 8

// linkWay is how a spare is given its name.
type linkWay int

const (
	// linkEmptyPath: linkat(fd, "", dir, name, AT_EMPTY_PATH), which needs
	// CAP_DAC_READ_SEARCH; tried first.
	linkEmptyPath linkWay = iota
	// linkProc: linkat through /proc/self/fd/N, for any user, where /proc
	// is mounted.
	linkProc
	// linkNone: neither works here; no spares are made.
	linkNone
)

// spareDir is the spares kept for one directory.
type spareDir struct {
	fds  []int
	raw  bool   // its calls may be raw (localFS)
	used uint64 // when it was last stocked, by placeholders.spareClock
}

// prepare makes, ahead of a claim of a sandbox configured as cfg, the
// spare inodes for the file placeholders that claim's hold may make:
// spareSets for each of cfg's file placeholders in a directory that
// exists, unless the name is taken by something not this process's
// placeholder. (One this process holds now counts: the call holding it is
// likely done, and the placeholder gone, by the time the sandbox being
// built is claimed.) It is best effort: what is not made ahead is made by
// name at the claim, as without spares.
func (p *placeholders) prepare(cfg *initproto.Config) {
	p.mu.Lock()
	if p.linkWay == linkNone || p.sparesOff {
		p.mu.Unlock()
		return
	}
	type parent struct{ source, rel string } // a mount's host path, the directory below it
	need := map[parent][]spareName{}
	eachFilePlaceholder(cfg, func(m initproto.Mount, rel []string) {
		if len(wire.PlaceholderContent(rel[len(rel)-1])) != 0 {
			return // made with its content each time, never from a spare
		}
		h := p.refs[filepath.Join(m.Source, strings.Join(rel, "/"))]
		k := parent{m.Source, strings.Join(rel[:len(rel)-1], "/")}
		need[k] = append(need[k], spareName{rel[len(rel)-1], h != nil && !h.own})
	})
	p.mu.Unlock()
	for k, names := range need {
		p.stock(k.source, k.rel, names)
	}
}

// spareName is a file placeholder's name, and whether it is this
// process's placeholder now.
type spareName struct {
	name string
	ours bool
}

// stock tops up the spares of the directory rel below source (a writable
// mount's host path) to spareSets for each of names that is missing or
// ours.
func (p *placeholders) stock(source, rel string, names []spareName) {
	root, err := os.OpenRoot(source)
	if err != nil {
		return
	}
	defer root.Close()
	if rel == "" {
		rel = "."
	}
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return
	}
	defer f.Close()
	d := newRawDir(int(f.Fd()))
	want := 0
	var st unix.Stat_t
	for _, n := range names {
		if n.ours || unix.Fstatat(d.fd, n.name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			want += spareSets // (unreadable: the claim finds out what it is)
		}
	}
	p.mu.Lock()
	have := 0
	if s := p.spares[d.id]; s != nil {
		have = len(s.fds)
	}
	// Where the depot serves the directory, its claims move placeholders
	// from there (depot_linux.go).
	skip := p.noSpares[d.id] || p.depot.servable(d, false)
	gen := p.spareGen
	p.mu.Unlock()
	if skip || d.id == (dirID{}) {
		return
	}
	var made []int
	for have+len(made) < want {
		fd, err := makeSpare(d)
		if err != nil {
			if len(made) == 0 && have == 0 {
				// No O_TMPFILE on this file system: not tried again.
				p.mu.Lock()
				if p.noSpares == nil {
					p.noSpares = map[dirID]bool{}
				}
				p.noSpares[d.id] = true
				p.mu.Unlock()
			}
			break
		}
		made = append(made, fd)
	}
	if len(made) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sparesOff || p.linkWay == linkNone || p.spareGen != gen {
		closeAll(d.raw, made)
		return
	}
	if p.spares == nil {
		p.spares = map[dirID]*spareDir{}
	}
	p.spareClock++
	s := p.spares[d.id]
	if s == nil {
		for len(p.spares) >= maxSpareDirs {
			p.dropOldestSpares()
		}
		s = &spareDir{raw: d.raw}
		p.spares[d.id] = s
	}
	s.used = p.spareClock
	// Two builds of one shape may have stocked at once: no more than
	// spareSets per name are kept.
	if over := min(len(s.fds)+len(made)-want, len(made)); over > 0 {
		closeAll(d.raw, made[len(made)-over:])
		made = made[:len(made)-over]
	}
	s.fds = append(s.fds, made...)
}

// makeSpare makes one spare in the directory d: an unnamed empty file,
// marked and share-locked as a placeholder is before it shows.
func makeSpare(d rawDir) (int, error) {
	fd, err := d.openat(".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	// A kernel older than O_TMPFILE would have opened the directory.
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		rawClose(d.raw, fd)
		return -1, errors.New("O_TMPFILE made no file")
	}
	_ = rawFsetxattr(d.raw, fd, placeholderXattr, []byte("1"), 0)
	if err := sharedLock(fd); err != nil {
		rawClose(d.raw, fd)
		return -1, err
	}
	return fd, nil
}

// linkSpare gives a spare of the directory pd the name. It returns the
// spare, open and locked, when it now has the name; exists when the name
// was taken already (the spare is kept for another time). p.mu is held.
func (p *placeholders) linkSpare(pd rawDir, name string) (fd int, exists bool) {
	s := p.spares[pd.id]
	if s == nil || len(s.fds) == 0 || p.linkWay == linkNone {
		return -1, false
	}
	fd = s.fds[len(s.fds)-1]
	for {
		var err error
		if linkFault != nil {
			err = linkFault(name)
		}
		if err == nil {
			err = pd.linkFD(fd, name, p.linkWay)
		}
		switch {
		case err == nil:
			s.fds = s.fds[:len(s.fds)-1]
			return fd, false
		case errors.Is(err, unix.EEXIST):
			return -1, true
		case p.linkWay == linkEmptyPath && (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EPERM)):
			p.linkWay = linkProc // no CAP_DAC_READ_SEARCH here
			continue
		case errors.Is(err, unix.EXDEV):
			// Another mount of the same directory: these spares cannot go
			// there.
			closeAll(s.raw, s.fds)
			delete(p.spares, pd.id)
			return -1, false
		case errors.Is(err, unix.ENOENT) && dirGone(pd.fd):
			return -1, false // the directory was removed under the claim
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES),
			errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EINVAL):
			// Neither way links here (no /proc, a policy against it).
			p.linkWay = linkNone
			p.closeSparesLocked()
			return -1, false
		default:
			// A full disk, a quota, an I/O error: this name is made the
			// old way, and the spares wait for a claim that can link them.
			return -1, false
		}
	}
}

// dirGone reports whether the open directory fd has been removed.
func dirGone(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Nlink == 0
}

// linkFault, when set (by tests), is the error a link of a spare fails
// with instead of being made, as a full disk would give.
var linkFault func(name string) error

// dropOldestSpares closes the spares of the directory stocked longest
// ago. p.mu is held.
func (p *placeholders) dropOldestSpares() {
	var oldest dirID
	var at uint64
	first := true
	for id, s := range p.spares {
		if first || s.used < at {
			oldest, at, first = id, s.used, false
		}
	}
	if s := p.spares[oldest]; s != nil {
		closeAll(s.raw, s.fds)
	}
	delete(p.spares, oldest)
}

// dropSpares closes every spare, and those a stocking under way makes:
// the pool keeps no warm sandbox that would claim them (it was released,
// or another grant's shapes replaced them). Each is a descriptor on the
// user's tree, which keeps its file system busy (it cannot be unmounted),
// so none is kept for nothing. Later builds make them again.
func (p *placeholders) dropSpares() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.spareGen++
	p.closeSparesLocked()
}

// closeSpares closes every spare and makes no more: the backend is
// closed.
func (p *placeholders) closeSpares() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sparesOff = true
	p.closeSparesLocked()
}

// closeSparesLocked closes every spare. p.mu is held.
func (p *placeholders) closeSparesLocked() {
	for id, s := range p.spares {
		closeAll(s.raw, s.fds)
		delete(p.spares, id)
	}
}

// closeAll closes fds.
func closeAll(raw bool, fds []int) {
	for _, fd := range fds {
		rawClose(raw, fd)
	}
}

// eachFilePlaceholder calls fn with each path of cfg that a hold would
// make as an empty file if missing: a denied or read-only path that is not
// a directory, in a writable mount m, as its components below m.
func eachFilePlaceholder(cfg *initproto.Config, fn func(m initproto.Mount, rel []string)) {
	paths := append(append([]string(nil), cfg.Masks...), cfg.ReadOnly...)
	for _, ro := range paths {
		m, ok := entryMount(cfg.Mounts, ro)
		if !ok || placeholderIsDir(cfg, paths, ro) {
			continue
		}
		fn(m, strings.Split(m.Rel(ro), "/"))
	}
}

// linkFD is linkat(2) of the open file fd to name in d, the way given.
func (d rawDir) linkFD(fd int, name string, way linkWay) error {
	n, err := rawPath(name)
	if err != nil {
		return err
	}
	var r error
	switch way {
	case linkEmptyPath:
		empty, _ := rawPath("")
		_, r = rawRetry(d.raw, unix.SYS_LINKAT, uintptr(fd), uintptr(unsafe.Pointer(empty)), uintptr(d.fd), uintptr(unsafe.Pointer(n)), unix.AT_EMPTY_PATH, 0)
		runtime.KeepAlive(empty)
	default:
		from, err := rawPath("/proc/self/fd/" + strconv.Itoa(fd))
		if err != nil {
			return err
		}
		atCWD := unix.AT_FDCWD
		_, r = rawRetry(d.raw, unix.SYS_LINKAT, uintptr(atCWD), uintptr(unsafe.Pointer(from)), uintptr(d.fd), uintptr(unsafe.Pointer(n)), unix.AT_SYMLINK_FOLLOW, 0)
		runtime.KeepAlive(from)
	}
	runtime.KeepAlive(n)
	return r
}
