package grant

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"io/fs"
	"slices"
	"strconv"
	"syscall"
)

// scanBufSize is the getdents64 buffer of a scan: a directory of a few
// hundred entries is read in one call.
const scanBufSize = 32 << 10

// scanForceLstat makes scanNested treat every entry as DT_UNKNOWN, as some
// file systems report them, so tests reach the lstat path.
var scanForceLstat bool

// The offsets in a linux_dirent64 record.
const (
	direntReclen = 16
	direntType   = 18
	direntName   = 19
)

// scanEntry is one listed directory entry: its name, at names[off:off+n],
// and its first eight bytes as a big-endian number, which orders most
// names without reading them.
type scanEntry struct {
	key    uint64
	off, n int
	dir    bool
	setID  bool // a regular file with S_ISUID or S_ISGID
	sock   bool // a Unix socket
	// linked: a regular file with more than one name, whose device and
	// inode are dev and ino (set only then).
	linked   bool
	dev, ino uint64
	symlink  bool // a symlink
}

// nestedScan is the state of one scanNested: stacks of the names and
// entries of the directories being walked, so a scan allocates a handful
// of slices and a string per directory opened, not per entry.
type nestedScan struct {
	rootIsGit bool
	others    []string
	found     nestedFound
	seen      int
	buf       []byte
	names     []byte
	ents      []scanEntry
	path      []byte // the directory being listed, then each entry in turn
	cname     []byte // a NUL-terminated name for fstatat
	// incomplete is set when a directory could not be opened or listed
	// (too many open files, permission, an I/O error): what it holds was
	// not seen, so the scan is not complete.
	incomplete bool
}

// scanNested is walkNested with the same results and bounds, read with
// getdents64 into a large buffer and typed by d_type (an lstat only for
// DT_UNKNOWN), with no allocation per entry. It opens each directory
// relative to its parent's descriptor with O_NOFOLLOW, so a directory
// swapped for a symlink while the scan runs is not followed, and a tree
// deeper than PATH_MAX (which a shell in a sandbox can make, one relative
// mkdir at a time) is scanned to its end rather than dropped with
// ENAMETOOLONG. A directory it cannot open or list makes the scan
// incomplete, as the cap does: it never reports a tree it did not see as
// seen.
func scanNested(r string, rootIsGit bool, others []string, found nestedFound) bool {
	s := &nestedScan{rootIsGit: rootIsGit, others: others, found: found, buf: make([]byte, scanBufSize)}
	s.path = append(make([]byte, 0, 512), r...)
	fd, err := retryEINTR(func() (int, error) {
		return syscall.Open(r, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	})
	if err != nil {
		return errors.Is(err, syscall.ENOENT)
	}
	defer syscall.Close(fd)
	return s.walk(fd, 1) && !s.incomplete
}

// walk visits the entries of the directory fd (at s.path), whose entries
// are at depth below the root. It reports false once the cap is passed.
func (s *nestedScan) walk(fd, depth int) bool {
	base, nbase := len(s.ents), len(s.names)
	defer func() { s.ents, s.names = s.ents[:base], s.names[:nbase] }()
	s.list(fd)
	end := len(s.ents)
	// Name order, as os.ReadDir sorts: which entries are counted before
	// the cap depends on it.
	slices.SortFunc(s.ents[base:end], func(a, b scanEntry) int {
		if a.key != b.key {
			return cmp.Compare(a.key, b.key)
		}
		return bytes.Compare(s.names[a.off:a.off+a.n], s.names[b.off:b.off+b.n])
	})
	if depth > 1 && s.repository(base, end) {
		s.found(string(s.path), ".git", true)
		return true
	}
	dirLen := len(s.path)
	for i := base; i < end; i++ {
		e := s.ents[i]
		name := s.names[e.off : e.off+e.n]
		s.path = s.path[:dirLen]
		if dirLen > 1 {
			s.path = append(s.path, '/')
		}
		s.path = append(s.path, name...)
		if e.dir && s.isOther() {
			continue
		}
		s.seen++
		if s.seen > maxProtectedScan {
			return false
		}
		descend := e.dir
		if e.setID {
			s.found(string(s.path), setIDRule, false)
		}
		if e.sock {
			s.found(string(s.path), socketRule, false)
		}
		if e.linked {
			s.found(string(s.path), linkedRule, false)
		}
		switch {
		case depth == 1 && s.rootIsGit:
		case !isProtectedName(name):
		case depth == 1:
			// Top-level names were added by the caller; do not descend into them.
			descend = false
		default:
			s.found(string(s.path), string(name), e.dir)
			descend = false
		}
		if descend && !s.descend(fd, name, depth+1) {
			return false
		}
	}
	return true
}

// repository reports whether the entries s.ents[base:end] of a directory
// make it one git takes for a repository (repositoryNames).
func (s *nestedScan) repository(base, end int) bool {
	var have [len(repositoryNames)]bool
	for _, e := range s.ents[base:end] {
		name := s.names[e.off : e.off+e.n]
		for i, n := range repositoryNames {
			if string(name) == n {
				have[i] = true
			}
		}
	}
	return repositoryFrom(have)
}

// descend walks the directory name in the directory fd. An entry that is
// gone, or is no longer a directory (swapped for a symlink or a file since
// it was listed), holds nothing to scan; any other failure to open it
// makes the scan incomplete.
func (s *nestedScan) descend(fd int, name []byte, depth int) bool {
	sub, err := retryEINTR(func() (int, error) {
		return syscall.Openat(fd, string(name), syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	})
	switch {
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.ELOOP):
		return true
	case err != nil:
		s.incomplete = true
		return true
	}
	defer syscall.Close(sub)
	return s.walk(sub, depth)
}

// isOther reports whether s.path is one of the other read-write roots.
func (s *nestedScan) isOther() bool {
	for _, o := range s.others {
		if o == string(s.path) {
			return true
		}
	}
	return false
}

// isProtectedName reports whether a directory entry's name is .git or an
// "anywhere" name of the table, all of which start with a dot or an
// underscore (TestAnywhereNamesStart).
func isProtectedName(name []byte) bool {
	if len(name) < 2 || name[0] != '.' && name[0] != '_' {
		return false
	}
	for _, e := range protectedTable {
		if e.Where == "anywhere" && e.Name == string(name) {
			return true
		}
	}
	return string(name) == ".git"
}

// list appends the entries of the directory fd to s.ents, as os.ReadDir
// would list them: without "." and "..", without an entry that is gone by
// the time its DT_UNKNOWN type is looked up, and those read before an
// error if one stops the listing (which makes the scan incomplete).
func (s *nestedScan) list(fd int) {
	for {
		n, err := retryEINTR(func() (int, error) { return syscall.Getdents(fd, s.buf) })
		if err != nil {
			s.incomplete = true
			return
		}
		if n <= 0 {
			return
		}
		for rec := s.buf[:n]; len(rec) >= direntName; {
			reclen := int(binary.NativeEndian.Uint16(rec[direntReclen:]))
			if reclen < direntName || reclen > len(rec) {
				s.incomplete = true
				return
			}
			name, typ := rec[direntName:reclen], rec[direntType]
			rec = rec[reclen:]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if string(name) == "." || string(name) == ".." {
				continue
			}
			dir, setID, sock, linked, symlink := typ == syscall.DT_DIR, false, typ == syscall.DT_SOCK, false, typ == syscall.DT_LNK
			var dev, ino uint64
			if typ == syscall.DT_UNKNOWN || typ == syscall.DT_REG || scanForceLstat {
				// A regular file's mode tells whether it is set-user-ID
				// or set-group-ID (setIDRule).
				var st syscall.Stat_t
				if err := s.statAt(fd, name, &st); errors.Is(err, syscall.ENOENT) {
					continue
				} else if err != nil {
					s.incomplete = true
					return
				}
				dir = st.Mode&syscall.S_IFMT == syscall.S_IFDIR
				setID = st.Mode&syscall.S_IFMT == syscall.S_IFREG && st.Mode&(syscall.S_ISUID|syscall.S_ISGID) != 0
				sock = st.Mode&syscall.S_IFMT == syscall.S_IFSOCK
				symlink = st.Mode&syscall.S_IFMT == syscall.S_IFLNK
				// A regular file's link count tells whether it has another
				// name (linkedRule).
				if linked = st.Mode&syscall.S_IFMT == syscall.S_IFREG && st.Nlink > 1; linked {
					dev, ino = uint64(st.Dev), uint64(st.Ino)
				}
			}
			var key [8]byte
			copy(key[:], name)
			s.ents = append(s.ents, scanEntry{key: binary.BigEndian.Uint64(key[:]), off: len(s.names), n: len(name), dir: dir, setID: setID, sock: sock, linked: linked, dev: dev, ino: ino, symlink: symlink})
			s.names = append(s.names, name...)
		}
	}
}

// retryEINTR calls f until it fails with something other than EINTR.
func retryEINTR(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if !errors.Is(err, syscall.EINTR) {
			return n, err
		}
	}
}

// oPath is O_PATH, which package syscall does not name on every
// architecture (0x200000 on all that Go supports on Linux).
const oPath = 0x200000

// fstatatNoFollow is fstatat(fd, name, AT_SYMLINK_NOFOLLOW), which package
// syscall does not export on every architecture: an O_PATH open that
// follows no symlink (and opens no device or fifo for reading), then fstat.
func fstatatNoFollow(fd int, name string, st *syscall.Stat_t) error {
	f, err := retryEINTR(func() (int, error) {
		return syscall.Openat(fd, name, oPath|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	})
	if err != nil {
		return err
	}
	defer syscall.Close(f)
	return syscall.Fstat(f, st)
}

// gitRepository reports whether p is a repository's .git directory: a
// directory, not a symlink, with a HEAD that is not empty and not a
// placeholder, and without PlaceholderXattr,
// the mark of a placeholder an airlock backend made. It looks through one
// descriptor of p, so what it checks is one directory, whatever is renamed
// meanwhile.
func gitRepository(p string) bool {
	fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	// (A symlink HEAD, as very old repositories have, refuses O_NOFOLLOW
	// with ELOOP: there all the same.)
	head, err := syscall.Openat(fd, "HEAD", syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err == nil {
		// An empty HEAD names nothing to git, and one that is airlock's
		// placeholder (another call's, held at the top of a tree that is
		// no repository) must not make the tree look like one: taken for
		// a bare repository, the tree would have its HEAD left unheld,
		// free to be written once that call ends.
		var st syscall.Stat_t
		empty := syscall.Fstat(head, &st) != nil || st.Size == 0
		marked := placeholderMarked(head)
		syscall.Close(head)
		if empty || marked {
			return false
		}
	} else if err != syscall.ELOOP {
		return false
	}
	return !placeholderMarked(fd)
}

// placeholderMarked reports whether the open file fd carries
// PlaceholderXattr.
func placeholderMarked(fd int) bool {
	var buf [8]byte
	n, err := syscall.Getxattr("/proc/self/fd/"+strconv.Itoa(fd), PlaceholderXattr, buf[:])
	return err == nil && n > 0
}

// statAt is fstatat(fd, name, AT_SYMLINK_NOFOLLOW): one system call where
// package syscall names it (statat_linux_amd64.go), an O_PATH open and an
// fstat elsewhere.
func (s *nestedScan) statAt(fd int, name []byte, st *syscall.Stat_t) error {
	if sysNewfstatat != 0 {
		return newfstatat(fd, name, st, &s.cname)
	}
	return fstatatNoFollow(fd, string(name), st)
}

// isPlaceholder reports whether p (not followed) carries PlaceholderXattr.
func isPlaceholder(p string) bool {
	fd, err := syscall.Open(p, oPath|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	return placeholderMarked(fd)
}

// fileID is a file's device and inode.
type fileID struct{ dev, ino uint64 }

// protectInside protects what the protected directories of out (those of
// the read-write tree r) lead host tools to outside themselves:
//   - the target of each symlink in them that lies in r or another
//     read-write tree of the grant (others, inWritableTree), under the
//     directory's rule, as add protects a protected symlink's: host tools
//     follow it (a hook installed as a link to ../../scripts/pre-commit, a
//     nested .vscode/tasks.json or .git/config a first session made a link
//     into the tree, and which the next session holds read-only whole);
//   - each of linked (regular files with more than one name the scan found
//     outside the protected paths) that is also a file in one of them,
//     under linkedRule: writing it would write that file.
//
// It opens each directory from its parent without following a symlink,
// skips the object stores of repositories (data that version control
// never runs nor reads configuration from), and looks at most at maxProtectedScan entries in
// all; it reports whether it saw every one.
func protectInside(r string, others []string, out []protectedPath, linked []string, add func(p, rule string, dir bool)) bool {
	names := map[fileID][]string{}
	for _, p := range linked {
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG && st.Nlink > 1 {
			id := fileID{uint64(st.Dev), uint64(st.Ino)}
			names[id] = append(names[id], p)
		}
	}
	s := &nestedScan{buf: make([]byte, scanBufSize)}
	type link struct{ p, rule string }
	var hits []string
	var links []link
	complete := true
	walked := map[string]bool{}
	for _, p := range out {
		if !p.dir || !within(p.path, r) || p.path == r || walked[p.path] {
			continue
		}
		walked[p.path] = true
		fd, err := retryEINTR(func() (int, error) {
			return syscall.Open(p.path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		})
		if err != nil {
			continue // missing, a symlink (add took its target) or no directory
		}
		s.path = append(s.path[:0], p.path...)
		repo := p.name == ".git" || p.name == ".git/modules" || p.name == ".hg" || p.name == ".jj"
		ok := s.inside(fd, repo, func(id fileID) { hits = append(hits, names[id]...) },
			func(l string) { links = append(links, link{l, p.name}) })
		syscall.Close(fd)
		if !ok {
			complete = false
			break
		}
	}
	slices.Sort(hits)
	for _, p := range slices.Compact(hits) {
		add(p, linkedRule, false)
	}
	for _, l := range links {
		res, err := resolve(l.p)
		if err != nil || !inWritableTree(res.path, r, others) {
			continue
		}
		var st syscall.Stat_t
		dir := syscall.Lstat(res.path, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR
		add(res.path, l.rule, dir)
	}
	return complete && !s.incomplete
}

// inside walks the directory fd (at s.path), calling hit with the
// identity of each regular file with more than one name and symlink with
// the path of each symlink. In a repository (repo) it skips directories
// named objects or store, where git, Mercurial and Jujutsu keep data. It reports false once the scan's bound is passed.
func (s *nestedScan) inside(fd int, repo bool, hit func(fileID), symlink func(string)) bool {
	base, nbase := len(s.ents), len(s.names)
	defer func() { s.ents, s.names = s.ents[:base], s.names[:nbase] }()
	s.list(fd)
	dirLen := len(s.path)
	defer func() { s.path = s.path[:dirLen] }()
	for i := base; i < len(s.ents); i++ {
		e := s.ents[i]
		if s.seen++; s.seen > maxProtectedScan {
			return false
		}
		name := string(s.names[e.off : e.off+e.n])
		s.path = append(append(s.path[:dirLen], '/'), name...)
		switch {
		case e.linked:
			hit(fileID{e.dev, e.ino})
		case e.symlink:
			symlink(string(s.path))
		}
		if !e.dir || repo && (name == "objects" || name == "store") {
			continue
		}
		sub, err := retryEINTR(func() (int, error) {
			return syscall.Openat(fd, name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		})
		switch {
		case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.ELOOP):
			continue
		case err != nil:
			s.incomplete = true
			continue
		}
		ok := s.inside(sub, repo, hit, symlink)
		syscall.Close(sub)
		if !ok {
			return false
		}
	}
	return true
}

// linkCount returns the number of names of the file fi describes.
func linkCount(fi fs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Nlink), true
}
