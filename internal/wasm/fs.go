package wasm

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/airlockhq/airlock/grant"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
)

// rootFS is one preopen: a host directory opened as an os.Root, so that no
// path the guest gives, ".." and symlinks included (also ones the guest
// plants itself), resolves outside it; the kernel walk is the os package's,
// component by component.
//
// On top, the grant the preopen comes from decides, for every location a
// path leads to, what the guest may do there, as it decides for the file
// tools (grant.CheckResolved) and as the native sandbox's mounts would:
// denied paths are absent (ENOENT), and a write is refused (EACCES) where
// the grant does not allow one, in a read-only directory granted inside
// this one, in a protected path, in airlock's own files. Each path is
// resolved inside the root, every symlink at every component followed as
// the kernel would, and judged at every location it passes through and
// where it ends; so a symlink the guest plants in a writable directory
// ("l -> sub") does not make a read-only one ("sub") writable. Where the
// platform tells (Linux: /proc/self/fd), each judgement is made again on
// where the file or directory opened really is, and writes and entry
// changes go through a descriptor of their parent directory, held open and
// judged first (openat_linux.go): a concurrent writer in the same tree
// (the capsule's own background shell command, say) that swaps a
// directory for a symlink between the check and the operation is caught.
//
// A read-only preopen refuses every change (EROFS) before anything reaches
// the host: every open that writes (O_WRONLY, O_RDWR, and also O_RDONLY
// with O_CREAT, O_TRUNC or O_APPEND, which wazero's own ReadFS let through
// to the host's open), every entry change, and every change through an
// open file.
type rootFS struct {
	experimentalsys.UnimplementedFS
	root     *os.Root
	dir      string // the host directory, resolved
	readOnly bool
	// grant decides each location below dir; nil leaves only the root's
	// containment and readOnly.
	grant *grant.Grant
	// keep are the slash paths, relative to the root, of what must stay
	// where it is: denied and protected paths and granted directories
	// below dir (see holds).
	keep []string
	// borrowed says root belongs to the caller (a wasm tool's directory,
	// opened once when it was loaded): close leaves it open.
	borrowed bool
	// fileSize, when positive, is the largest a write may make a file
	// (the grant's limits.file_size, which RLIMIT_FSIZE enforces for a
	// sandboxed command): see rootFile.fit.
	fileSize int64
	// files counts the files open in every preopen of the run, bounded
	// by maxOpenFiles; nil leaves them unbounded (tests).
	files *atomic.Int64
	// listed counts the bytes of directory listings the run's open
	// directories hold, bounded by maxListed; nil leaves them unbounded.
	listed *atomic.Int64
	// mem is the run's linear memory, which bounds what one fd_readdir
	// may read; nil leaves it unbounded.
	mem *memory
}

// maxListed bounds the directory listings one run holds on the broker's
// heap, in all its open directories together (see rootFile.Readdir): a
// directory of some 400,000 entries of 20-byte names lists in one go.
const maxListed = 32 << 20

// direntCost is what one entry of a listing takes on the broker's heap
// besides its name (wazero's Dirent and its copy in its cache).
const direntCost = 64

// direntSize is WASI's dirent header: wazero reads a directory for at
// most one entry per direntSize bytes of the module's buffer.
const direntSize = 24

// maxOpenFiles bounds the files one run may hold open at once, in all its
// preopens together. Each is a descriptor of the broker's own process,
// which every session shares: a module opening one file in a loop held
// all 20,000 the process could have, and the broker's own opens failed
// with "too many open files" while it ran (red team). A Go program keeps a
// handful open; the standard library's own os tests pass under this.
const maxOpenFiles = 1024

// errTooManyFiles is what an open past maxOpenFiles gets: EIO, since WASI
// preview 1 as wazero passes errors on has no EMFILE.
const errTooManyFiles = experimentalsys.EIO

// newRootFS opens dir (see openDir: no symlink may lead to it) as a
// preopen; a non-nil root is dir opened already, which it borrows.
// fileSize, when positive, bounds the files written through it.
func newRootFS(dir string, root *os.Root, readOnly bool, g *grant.Grant, fileSize int64) (*rootFS, error) {
	borrowed := root != nil
	if !borrowed {
		r, err := openDir(dir)
		if err != nil {
			return nil, err
		}
		root = r
	}
	f := &rootFS{root: root, dir: dir, readOnly: readOnly, grant: g, borrowed: borrowed, fileSize: fileSize}
	if g != nil {
		var keep []string
		keep = append(keep, g.Masks()...)
		keep = append(keep, g.Protected()...)
		for _, m := range g.Mounts() {
			keep = append(keep, m.Source)
		}
		for _, k := range keep {
			if x, ok := f.relOf(k); ok && x != "." {
				f.keep = append(f.keep, x)
			}
		}
	}
	return f, nil
}

func (f *rootFS) close() {
	if !f.borrowed {
		_ = f.root.Close()
	}
}

// relOf returns the host path p relative to the root, slash-separated, and
// whether it lies inside the root at all.
func (f *rootFS) relOf(p string) (string, bool) {
	x, err := filepath.Rel(f.dir, p)
	if err != nil || x == ".." || strings.HasPrefix(x, ".."+string(filepath.Separator)) || filepath.IsAbs(x) {
		return "", false
	}
	return filepath.ToSlash(x), true
}

// judge applies the grant to one location inside the root, given as a
// slash path relative to it with no symlink on the way: ENOENT where the
// grant hides it (or does not grant it), EACCES where write is set and the
// grant does not let it be changed.
func (f *rootFS) judge(rel string, write bool) experimentalsys.Errno {
	if f.grant == nil {
		return 0
	}
	host := filepath.Join(f.dir, filepath.FromSlash(rel))
	if !f.grant.CheckResolved(host, false).Allowed {
		return experimentalsys.ENOENT
	}
	if write && !f.grant.CheckResolved(host, true).Allowed {
		return experimentalsys.EACCES
	}
	return 0
}

// guardedOp runs one of the race-free entry operations (openat_linux.go)
// when the root has a grant to keep; ok is false when it did not run, and
// the caller goes through the root by name.
func (f *rootFS) guardedOp(op func() (experimentalsys.Errno, bool)) (experimentalsys.Errno, bool) {
	if f.grant == nil {
		return 0, false
	}
	if beforeOpen != nil {
		beforeOpen()
	}
	return op()
}

// beforeOpen, when set (by tests), runs between the checks of OpenFile and
// its open, where a concurrent writer could change the tree.
var beforeOpen func()

// verifyOpened applies the grant to where file really is, when the
// platform can say; where it can say (Linux) and does not, the file is
// refused.
func (f *rootFS) verifyOpened(file *os.File, write bool) experimentalsys.Errno {
	if f.grant == nil {
		return 0
	}
	real, ok := openedPath(file)
	if !ok {
		if canLocate {
			return experimentalsys.ENOENT
		}
		return 0
	}
	x, ok := f.relOf(real)
	if !ok {
		return experimentalsys.EPERM // outside the root: os.Root makes this impossible
	}
	return f.judge(x, write)
}

// clean turns a guest path (relative to the preopen) into one os.Root takes.
func clean(p string) string {
	p = path.Clean("/" + p)
	if p == "/" {
		return "."
	}
	return p[1:]
}

// holds reports whether p is, or is an ancestor of, a denied or protected
// path or a granted directory: renaming or removing it would carry that
// path's contents to a name no rule covers (and renaming it back would
// bring them home changed), as a mount point cannot be moved in the native
// sandbox.
func (f *rootFS) holds(p string) bool {
	if p == "." {
		return true
	}
	for _, x := range f.keep {
		if x == p || strings.HasPrefix(x, p+"/") {
			return true
		}
	}
	return false
}

// maxLinks bounds the symlinks followed in one path, as the kernel does.
const maxLinks = 40

// maxPath bounds the length of a path (and of a symlink's target) the
// guest gives, as Linux's PATH_MAX bounds one a sandboxed command gives:
// longer ones are refused (ENAMETOOLONG) before any work. A host function
// is not stopped at the run's deadline, and resolving a path for the grant
// takes time that grows with the square of its components: one open of a
// 2 MB path kept the broker busy for minutes past a 1 s limit (red team).
const maxPath = 4096

// resolved follows p inside the root as the kernel would, every symlink at
// every component (as far as the path exists; the rest is appended as
// given), and returns every location it passed through on the way (links
// included) and where it ends, for the grant's checks. follow says whether
// the last component is followed too.
func (f *rootFS) resolved(p string, follow bool) (trail []string, end string, e experimentalsys.Errno) {
	parts := strings.Split(p, "/")
	done := "."
	links := 0
	for len(parts) > 0 {
		c := parts[0]
		parts = parts[1:]
		if c == "" || c == "." {
			continue
		}
		next := clean(done + "/" + c)
		if c == ".." {
			done = next
			continue
		}
		trail = append(trail, next)
		if len(parts) == 0 && !follow {
			done = next
			break
		}
		fi, err := f.root.Lstat(next)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			done = next
			continue
		}
		if links++; links > maxLinks {
			return nil, "", experimentalsys.ELOOP
		}
		t, err := f.root.Readlink(next)
		if err != nil {
			return nil, "", experimentalsys.UnwrapOSError(err)
		}
		t = filepath.ToSlash(t)
		if strings.HasPrefix(t, "/") {
			// os.Root refuses absolute links; judge the name as given.
			done = next
			continue
		}
		parts = append(strings.Split(t, "/"), parts...)
	}
	return trail, done, 0
}

// check applies the grant to a guest path: every location on the way must
// be visible, and, for a write, the path as given and where it leads must
// both be writable. It returns the path for os.Root and where it leads.
func (f *rootFS) check(p string, write, follow bool) (string, string, experimentalsys.Errno) {
	if len(p) >= maxPath {
		return "", "", experimentalsys.ENAMETOOLONG
	}
	p = clean(p)
	if f.grant == nil {
		return p, p, 0
	}
	trail, r, e := f.resolved(p, follow)
	if e != 0 {
		return "", "", e
	}
	for _, x := range append(trail, p, r) {
		if e := f.judge(x, false); e != 0 {
			return "", "", e
		}
	}
	if write {
		for _, x := range []string{p, r} {
			if e := f.judge(x, true); e != 0 {
				return "", "", e
			}
		}
	}
	return p, r, 0
}

func errno(err error) experimentalsys.Errno {
	if err == nil {
		return 0
	}
	if errors.Is(err, os.ErrNotExist) {
		return experimentalsys.ENOENT
	}
	if errors.Is(err, syscall.ENXIO) {
		// A non-blocking open of a FIFO for writing with no reader, or the
		// open of a socket: refused as every FIFO and socket is (kindErr).
		return experimentalsys.EACCES
	}
	e := experimentalsys.UnwrapOSError(err)
	if e == experimentalsys.EIO && strings.Contains(err.Error(), "path escapes from parent") {
		return experimentalsys.EPERM
	}
	return e
}

func osFlag(oflag experimentalsys.Oflag) int {
	var flag int
	switch oflag & (experimentalsys.O_RDONLY | experimentalsys.O_RDWR | experimentalsys.O_WRONLY) {
	case experimentalsys.O_RDWR:
		flag |= os.O_RDWR
	case experimentalsys.O_WRONLY:
		flag |= os.O_WRONLY
	default:
		flag |= os.O_RDONLY
	}
	if oflag&experimentalsys.O_APPEND != 0 {
		flag |= os.O_APPEND
	}
	if oflag&experimentalsys.O_CREAT != 0 {
		flag |= os.O_CREATE
	}
	if oflag&experimentalsys.O_EXCL != 0 {
		flag |= os.O_EXCL
	}
	if oflag&experimentalsys.O_SYNC != 0 {
		flag |= os.O_SYNC
	}
	if oflag&experimentalsys.O_TRUNC != 0 {
		flag |= os.O_TRUNC
	}
	return flag | nonBlock | platformFlag(oflag)
}

// kindErr refuses an open file that is neither a regular file nor a
// directory: a FIFO, a socket, a device. Every open for the module is
// non-blocking (osFlag), so opening one returns at once; but its reads and
// writes, and a blocking open, wait in the broker's own process for as long
// as whoever holds the other end likes (the capsule's own shell command, or
// a sandbox of the session, made the FIFO), past the run's deadline, which
// wazero enforces between host calls only, and past SIGTERM: a capsule with
// a 5 s limit that opened a FIFO it had made was alive hours later (red
// team). Nothing a capsule or a wasm tool is for needs one. WASI has no
// ENXIO, which the host's open gives for some of them; EACCES is what the
// module sees for all.
func kindErr(fi fs.FileInfo) experimentalsys.Errno {
	if fi.Mode().IsRegular() || fi.IsDir() {
		return 0
	}
	return experimentalsys.EACCES
}

// statKind stats an open file and refuses it, closing it, when kindErr
// does.
func statKind(file *os.File) (fs.FileInfo, experimentalsys.Errno) {
	fi, err := file.Stat()
	e := errno(err)
	if e == 0 {
		e = kindErr(fi)
	}
	if e != 0 {
		_ = file.Close()
		return nil, e
	}
	return fi, 0
}

// writes reports whether an open with oflag can change the file system:
// whatever can write is treated as a write, O_RDONLY|O_TRUNC included.
func writes(oflag experimentalsys.Oflag) bool {
	return oflag&(experimentalsys.O_RDWR|experimentalsys.O_WRONLY|experimentalsys.O_APPEND|experimentalsys.O_CREAT|experimentalsys.O_TRUNC|experimentalsys.O_EXCL) != 0
}

// forWriting reports whether a file opened with oflag may be written through.
func forWriting(oflag experimentalsys.Oflag) bool {
	return oflag&(experimentalsys.O_RDWR|experimentalsys.O_WRONLY) != 0
}

// OpenFile implements experimentalsys.FS.
func (f *rootFS) OpenFile(p string, oflag experimentalsys.Oflag, perm fs.FileMode) (_ experimentalsys.File, e experimentalsys.Errno) {
	if f.readOnly && writes(oflag) {
		return nil, experimentalsys.EROFS
	}
	if f.files != nil {
		if f.files.Add(1) > maxOpenFiles {
			f.files.Add(-1)
			return nil, errTooManyFiles
		}
		// Given back unless the file is handed to the module.
		defer func() {
			if e != 0 {
				f.files.Add(-1)
			}
		}()
	}
	p, real, e := f.check(p, writes(oflag), oflag&experimentalsys.O_NOFOLLOW == 0)
	if e != 0 {
		return nil, e
	}
	if oflag&experimentalsys.O_NOFOLLOW != 0 {
		// os.Root follows a final symlink (inside the root) whatever the
		// flags; a guest that asks not to follow one must see ELOOP, as
		// from openat, to resolve it itself (Go's own os.Root does).
		if fi, err := f.root.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, experimentalsys.ELOOP
		}
	}
	if beforeOpen != nil {
		beforeOpen()
	}
	flag := osFlag(oflag)
	guarded := f.grant != nil
	var file *os.File
	if guarded && writes(oflag) {
		fl, e, handled := f.openForWrite(p, flag, perm)
		if handled && e != 0 {
			return nil, e
		}
		file = fl
	}
	if file == nil {
		// Truncation waits until the file opened has been checked.
		trunc := guarded && flag&os.O_TRUNC != 0
		if trunc {
			flag &^= os.O_TRUNC
		}
		fl, err := f.root.OpenFile(p, flag, perm)
		if err != nil {
			return nil, errno(err)
		}
		if _, e := statKind(fl); e != 0 {
			return nil, e
		}
		if e := f.verifyOpened(fl, writes(oflag)); e != 0 {
			_ = fl.Close()
			return nil, e
		}
		if trunc {
			if err := fl.Truncate(0); err != nil {
				_ = fl.Close()
				return nil, errno(err)
			}
		}
		file = fl
	}
	if oflag&experimentalsys.O_DIRECTORY != 0 {
		if fi, err := file.Stat(); err == nil && !fi.IsDir() {
			_ = file.Close()
			return nil, experimentalsys.ENOTDIR
		}
	}
	rf := &rootFile{fs: f, path: p, real: real, flag: oflag, file: file}
	rf.seeker.f = rf
	return rf, 0
}

// Lstat implements experimentalsys.FS.
func (f *rootFS) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) {
	p, _, e := f.check(p, false, false)
	if e != 0 {
		return sys.Stat_t{}, e
	}
	if st, e, ok := f.statAt(p, false); ok {
		return st, e
	}
	fi, err := f.root.Lstat(p)
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	return sys.NewStat_t(fi), 0
}

// Stat implements experimentalsys.FS.
func (f *rootFS) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	p, _, e := f.check(p, false, true)
	if e != 0 {
		return sys.Stat_t{}, e
	}
	if st, e, ok := f.statAt(p, true); ok {
		return st, e
	}
	fi, err := f.root.Stat(p)
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	return sys.NewStat_t(fi), 0
}

// Mkdir implements experimentalsys.FS.
func (f *rootFS) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	if f.readOnly {
		return experimentalsys.EROFS
	}
	p, _, e := f.check(p, true, false)
	if e != 0 {
		return e
	}
	if e, ok := f.guardedOp(func() (experimentalsys.Errno, bool) { return f.mkdirAt(p, perm) }); ok {
		if e == experimentalsys.ENOTDIR {
			e = experimentalsys.ENOENT
		}
		return e
	}
	e = errno(f.root.Mkdir(p, perm))
	if e == experimentalsys.ENOTDIR {
		e = experimentalsys.ENOENT
	}
	return e
}

// Chmod implements experimentalsys.FS.
func (f *rootFS) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	if f.readOnly {
		return experimentalsys.EROFS
	}
	p, _, e := f.check(p, true, true)
	if e != 0 {
		return e
	}
	return errno(f.root.Chmod(p, perm))
}

// Rename implements experimentalsys.FS.
func (f *rootFS) Rename(from, to string) experimentalsys.Errno {
	if f.readOnly {
		return experimentalsys.EROFS
	}
	if dotted(from) || dotted(to) {
		return experimentalsys.EINVAL
	}
	from, fromReal, e := f.check(from, true, false)
	if e != 0 {
		return e
	}
	to, toReal, e := f.check(to, true, false)
	if e != 0 {
		return e
	}
	if f.holds(from) || f.holds(to) || f.holds(fromReal) || f.holds(toReal) {
		return experimentalsys.EACCES
	}
	if e, ok := f.guardedOp(func() (experimentalsys.Errno, bool) { return f.renameAt(from, to) }); ok {
		return e
	}
	return errno(f.root.Rename(from, to))
}

// dotted reports whether a path ends in "." or "..", which rmdir, unlink
// and rename refuse (EINVAL), as POSIX says: "dir/." must not remove dir,
// and "." must not remove the preopen itself.
func dotted(p string) bool {
	p = strings.TrimRight(p, "/")
	b := path.Base(p)
	return p == "" || b == "." || b == ".."
}

// Rmdir implements experimentalsys.FS.
func (f *rootFS) Rmdir(p string) experimentalsys.Errno {
	if f.readOnly {
		return experimentalsys.EROFS
	}
	if dotted(p) {
		return experimentalsys.EINVAL
	}
	p, real, e := f.check(p, true, false)
	if e != 0 {
		return e
	}
	fi, err := f.root.Lstat(p)
	if err != nil {
		return errno(err)
	}
	if !fi.IsDir() {
		return experimentalsys.ENOTDIR
	}
	if f.holds(p) || f.holds(real) {
		return experimentalsys.EACCES
	}
	if e, ok := f.guardedOp(func() (experimentalsys.Errno, bool) { return f.removeAt(p, true) }); ok {
		return e
	}
	return errno(f.root.Remove(p))
}

// Unlink implements experimentalsys.FS.
func (f *rootFS) Unlink(p string) experimentalsys.Errno {
	if f.readOnly {
		return experimentalsys.EROFS
	}
	if dotted(p) {
		return experimentalsys.EISDIR
	}
	p, real, e := f.check(p, true, false)
	if e != 0 {
		return e
	}
	fi, err := f.root.Lstat(p)
	if err != nil {
		return errno(err)
	}
	if fi.IsDir() {
		return experimentalsys.EISDIR
	}
	if f.holds(p) || f.holds(real) {
		return experimentalsys.EACCES
	}
	if e, ok := f.guardedOp(func() (experimentalsys.Errno, bool) { return f.removeAt(p, false) }); ok {
		return e
	}
	return errno(f.root.Remove(p))
}

// Link implements experimentalsys.FS.
func (f *rootFS) Link(oldPath, newPath string) experimentalsys.Errno {
	if f.readOnly {
		return experimentalsys.EROFS
	}
	oldPath, _, e := f.check(oldPath, true, false)
	if e != 0 {
		return e
	}
	newPath, _, e = f.check(newPath, true, false)
	if e != 0 {
		return e
	}
	if e, ok := f.guardedOp(func() (experimentalsys.Errno, bool) { return f.linkAt(oldPath, newPath) }); ok {
		return e
	}
	return errno(f.root.Link(oldPath, newPath))
}

// Symlink implements experimentalsys.FS. An absolute target is refused, as
// WASI path resolution says.
func (f *rootFS) Symlink(target, link string) experimentalsys.Errno {
	if f.readOnly {
		return experimentalsys.EROFS
	}
	if path.IsAbs(target) {
		return experimentalsys.EPERM
	}
	if len(target) >= maxPath {
		return experimentalsys.ENAMETOOLONG
	}
	link, _, e := f.check(link, true, false)
	if e != 0 {
		return e
	}
	if e, ok := f.guardedOp(func() (experimentalsys.Errno, bool) { return f.symlinkAt(target, link) }); ok {
		return e
	}
	return errno(f.root.Symlink(target, link))
}

// Readlink implements experimentalsys.FS.
func (f *rootFS) Readlink(p string) (string, experimentalsys.Errno) {
	p, _, e := f.check(p, false, false)
	if e != 0 {
		return "", e
	}
	if t, e, ok := f.readlinkAt(p); ok {
		return filepath.ToSlash(t), e
	}
	t, err := f.root.Readlink(p)
	if err != nil {
		return "", errno(err)
	}
	return filepath.ToSlash(t), 0
}

// Utimens implements experimentalsys.FS.
func (f *rootFS) Utimens(p string, atim, mtim int64) experimentalsys.Errno {
	if f.readOnly {
		return experimentalsys.EROFS
	}
	p, _, e := f.check(p, true, true)
	if e != 0 {
		return e
	}
	if e, ok := f.utimensAt(p, atim, mtim); ok {
		return e
	}
	fi, err := f.root.Stat(p)
	if err != nil {
		return errno(err)
	}
	st := sys.NewStat_t(fi)
	a, m := times(atim, st.Atim), times(mtim, st.Mtim)
	return errno(f.root.Chtimes(p, a, m))
}

// times turns a WASI timestamp (or UTIME_OMIT) into a time; wazero has
// already turned "now" into one.
func times(t, cur int64) time.Time {
	if t == experimentalsys.UTIME_OMIT {
		return time.Unix(0, cur)
	}
	return time.Unix(0, t)
}

// rootFile is an open file of a rootFS.
type rootFile struct {
	unimplemented // one level deeper than seeker, so its Seek gives way
	seeker[int64]
	fs     *rootFS
	path   string // as os.Root takes it
	real   string // where it led when opened (symlinks followed)
	flag   experimentalsys.Oflag
	file   *os.File
	closed bool
	// listed is what this directory's listing since it was opened or
	// rewound is charged to the run's fs.listed.
	listed int64
	// rewound: the directory was sought to its start; reopen before the
	// next Readdir (os.File cannot rewind a directory listing).
	rewound bool
	st      *sys.Stat_t
}

func (r *rootFile) stat() (sys.Stat_t, experimentalsys.Errno) {
	if r.st == nil {
		st, e := r.Stat()
		if e != 0 {
			return st, e
		}
	}
	return *r.st, 0
}

// Dev implements experimentalsys.File.
func (r *rootFile) Dev() (uint64, experimentalsys.Errno) {
	st, e := r.stat()
	return st.Dev, e
}

// Ino implements experimentalsys.File.
func (r *rootFile) Ino() (sys.Inode, experimentalsys.Errno) {
	st, e := r.stat()
	return st.Ino, e
}

// IsDir implements experimentalsys.File.
func (r *rootFile) IsDir() (bool, experimentalsys.Errno) {
	st, e := r.stat()
	return st.Mode.IsDir(), e
}

// IsAppend implements experimentalsys.File.
func (r *rootFile) IsAppend() bool { return r.flag&experimentalsys.O_APPEND != 0 }

// SetAppend implements experimentalsys.File by reopening the file with
// the new flag at the same offset.
func (r *rootFile) SetAppend(enable bool) experimentalsys.Errno {
	if r.closed {
		return experimentalsys.EBADF
	}
	if enable && (r.fs.readOnly || !forWriting(r.flag)) {
		return experimentalsys.EBADF // appending is writing
	}
	flag := r.flag &^ (experimentalsys.O_CREAT | experimentalsys.O_TRUNC | experimentalsys.O_EXCL)
	if enable {
		flag |= experimentalsys.O_APPEND
	} else {
		flag &^= experimentalsys.O_APPEND
	}
	return r.reopen(flag)
}

func (r *rootFile) reopen(flag experimentalsys.Oflag) experimentalsys.Errno {
	isDir, e := r.IsDir()
	if e != 0 {
		return e
	}
	var off int64
	if !isDir {
		o, err := r.file.Seek(0, io.SeekCurrent)
		if err != nil {
			return errno(err)
		}
		off = o
	}
	// By name, so anything may be there now: the open does not wait on a
	// FIFO (osFlag), and what it opened must be the file open already.
	nf, err := r.fs.root.OpenFile(r.path, osFlag(flag), 0)
	if err != nil {
		return errno(err)
	}
	a, err1 := r.file.Stat()
	b, err2 := nf.Stat()
	if err1 != nil || err2 != nil || !os.SameFile(a, b) {
		_ = nf.Close()
		return experimentalsys.ENOENT
	}
	if !isDir {
		if _, err := nf.Seek(off, io.SeekStart); err != nil {
			_ = nf.Close()
			return errno(err)
		}
	}
	_ = r.file.Close()
	r.file, r.flag = nf, flag
	return 0
}

// Stat implements experimentalsys.File.
func (r *rootFile) Stat() (sys.Stat_t, experimentalsys.Errno) {
	if r.closed {
		return sys.Stat_t{}, experimentalsys.EBADF
	}
	fi, err := r.file.Stat()
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	st := sys.NewStat_t(fi)
	r.st = &st
	return st, 0
}

func (r *rootFile) fileErr(err error) experimentalsys.Errno {
	if r.closed {
		return experimentalsys.EBADF
	}
	e := errno(err)
	if e == experimentalsys.EISDIR || e == experimentalsys.EINVAL {
		if isDir, _ := r.IsDir(); isDir {
			return experimentalsys.EISDIR
		}
	}
	return e
}

// Read implements experimentalsys.File.
func (r *rootFile) Read(buf []byte) (int, experimentalsys.Errno) {
	if len(buf) == 0 {
		return 0, 0
	}
	n, err := r.file.Read(buf)
	if err == io.EOF {
		err = nil
	}
	if err != nil {
		return n, r.fileErr(err)
	}
	return n, 0
}

// Pread implements experimentalsys.File.
func (r *rootFile) Pread(buf []byte, off int64) (int, experimentalsys.Errno) {
	if len(buf) == 0 {
		return 0, 0
	}
	n, err := r.file.ReadAt(buf, off)
	if err == io.EOF {
		err = nil
	}
	if err != nil {
		return n, r.fileErr(err)
	}
	return n, 0
}

// unimplemented answers ENOSYS for what rootFile does not implement.
type unimplemented struct {
	experimentalsys.UnimplementedFile
}

// seeker carries rootFile's Seek, which experimentalsys.File requires with
// an Errno result. It is generic only because go vet's stdmethods check
// wants io.Seeker's signature of every method named Seek it can match, and
// passes over a parameter whose declared type is a type parameter.
type seeker[Off ~int64] struct{ f *rootFile }

// Seek implements experimentalsys.File.
func (s seeker[Off]) Seek(offset Off, whence int) (int64, experimentalsys.Errno) {
	return s.f.seek(int64(offset), whence)
}

func (r *rootFile) seek(offset int64, whence int) (int64, experimentalsys.Errno) {
	if r.closed {
		return 0, experimentalsys.EBADF
	}
	if whence < io.SeekStart || whence > io.SeekEnd {
		return 0, experimentalsys.EINVAL
	}
	if isDir, _ := r.IsDir(); isDir {
		if offset == 0 && whence == io.SeekStart {
			r.rewound = true
			return 0, 0
		}
		return 0, experimentalsys.EISDIR
	}
	n, err := r.file.Seek(offset, whence)
	if err != nil {
		return n, r.fileErr(err)
	}
	return n, 0
}

// Readdir implements experimentalsys.File.
func (r *rootFile) Readdir(n int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	if r.closed {
		return nil, experimentalsys.EBADF
	}
	if isDir, _ := r.IsDir(); !isDir {
		return nil, experimentalsys.EBADF
	}
	// wazero reads n entries for a buffer of n*direntSize bytes, and keeps
	// them for the descriptor, checking the buffer against the module's
	// memory only afterwards: a module of a few pages passing 4 GiB had
	// the broker read and hold the whole directory, once per descriptor
	// (red team). A buffer past the module's memory is a fault, as
	// getdents says.
	if m := r.fs.mem; m != nil && uint64(n) > uint64(len(m.buf))/direntSize+2 {
		return nil, experimentalsys.EFAULT
	}
	if r.rewound {
		r.rewound = false
		if e := r.reopen(r.flag); e != 0 {
			return nil, e
		}
		r.unlist()
	}
	list, err := r.file.ReadDir(n)
	if err != nil && err != io.EOF {
		return nil, r.fileErr(err)
	}
	// Entries are judged where the open directory really is (a name swapped
	// for a symlink since the open would have them judged elsewhere).
	at := r.real
	if real, ok := openedPath(r.file); ok {
		x, inside := r.fs.relOf(real)
		if !inside {
			return nil, experimentalsys.EPERM
		}
		at = x
	} else if canLocate && r.fs.grant != nil {
		return nil, experimentalsys.ENOENT
	}
	out := make([]experimentalsys.Dirent, 0, len(list))
	for _, d := range list {
		name := d.Name()
		if r.fs.judge(clean(at+"/"+name), false) != 0 {
			continue // denied: left out
		}
		var ino sys.Inode
		if fi, err := d.Info(); err == nil {
			ino = sys.NewStat_t(fi).Ino
		}
		out = append(out, experimentalsys.Dirent{Name: name, Ino: ino, Type: d.Type()})
	}
	// What wazero keeps of the listing is charged to the run until the
	// directory is closed or rewound: within its memory, a module could
	// still have one large directory listed on every descriptor it may
	// hold. The charge counts every entry since the open, more than
	// wazero keeps of a listing read in order.
	if l := r.fs.listed; l != nil {
		var cost int64
		for _, d := range out {
			cost += direntCost + int64(len(d.Name))
		}
		if l.Add(cost) > maxListed {
			l.Add(-cost)
			return nil, errListed
		}
		r.listed += cost
	}
	return out, 0
}

// errListed is what a listing past maxListed gets: EIO, since WASI
// preview 1 as wazero passes errors on has no ENOMEM.
const errListed = experimentalsys.EIO

// unlist gives back what the directory's listing was charged.
func (r *rootFile) unlist() {
	if r.fs.listed != nil && r.listed != 0 {
		r.fs.listed.Add(-r.listed)
	}
	r.listed = 0
}

// Write implements experimentalsys.File.
func (r *rootFile) Write(buf []byte) (int, experimentalsys.Errno) {
	if e := r.writeErr(); e != 0 {
		return 0, e
	}
	if len(buf) == 0 {
		return 0, 0
	}
	k, e := r.fit(len(buf), -1)
	if e != 0 {
		return 0, e
	}
	n, err := r.file.Write(buf[:k])
	if err != nil {
		return n, r.fileErr(err)
	}
	return n, 0
}

// Pwrite implements experimentalsys.File.
func (r *rootFile) Pwrite(buf []byte, off int64) (int, experimentalsys.Errno) {
	if e := r.writeErr(); e != 0 {
		return 0, e
	}
	if len(buf) == 0 {
		return 0, 0
	}
	if off < 0 {
		return 0, experimentalsys.EINVAL
	}
	k, e := r.fit(len(buf), off)
	if e != 0 {
		return 0, e
	}
	n, err := r.file.WriteAt(buf[:k], off)
	if err != nil {
		return n, r.fileErr(err)
	}
	return n, 0
}

// Truncate implements experimentalsys.File (and so fd_allocate).
func (r *rootFile) Truncate(size int64) experimentalsys.Errno {
	if e := r.writeErr(); e != 0 {
		return e
	}
	if size < 0 {
		return experimentalsys.EINVAL
	}
	if r.fs.fileSize > 0 && size > r.fs.fileSize {
		return errFileSize
	}
	if err := r.file.Truncate(size); err != nil {
		return r.fileErr(err)
	}
	return 0
}

// Sync implements experimentalsys.File.
func (r *rootFile) Sync() experimentalsys.Errno {
	if r.closed {
		return experimentalsys.EBADF
	}
	if err := r.file.Sync(); err != nil {
		if isDir, _ := r.IsDir(); isDir {
			return 0 // some systems cannot sync a directory
		}
		return errno(err)
	}
	return 0
}

// Datasync implements experimentalsys.File.
func (r *rootFile) Datasync() experimentalsys.Errno { return r.Sync() }

// Utimens implements experimentalsys.File.
func (r *rootFile) Utimens(atim, mtim int64) experimentalsys.Errno {
	if r.closed {
		return experimentalsys.EBADF
	}
	if r.fs.readOnly {
		return experimentalsys.EROFS
	}
	if e, ok := r.utimensHeld(atim, mtim); ok {
		return e
	}
	st, e := r.Stat()
	if e != 0 {
		return e
	}
	if r.fs.protectedOrDenied(r.path) {
		return experimentalsys.EACCES
	}
	return errno(r.fs.root.Chtimes(r.path, times(atim, st.Atim), times(mtim, st.Mtim)))
}

// protectedOrDenied reports whether a write to p is refused.
func (f *rootFS) protectedOrDenied(p string) bool {
	_, _, e := f.check(p, true, true)
	return e != 0
}

// errFileSize is what a write past the file size limit gets: EIO, since
// WASI preview 1 as wazero passes errors on has no EFBIG (every errno it
// does not know becomes EIO anyway).
const errFileSize = experimentalsys.EIO

// fit bounds a write of n bytes at off (negative: where the file's offset
// is, or at its end when it appends) by the file size limit, as
// RLIMIT_FSIZE does for a sandboxed command: it returns how many bytes may
// be written (a short write when only some fit), and errFileSize when
// none may. Without it a wasm tool or capsule under file_size = 64KiB
// wrote a 1 GiB file (red team).
func (r *rootFile) fit(n int, off int64) (int, experimentalsys.Errno) {
	limit := r.fs.fileSize
	if limit <= 0 {
		return n, 0
	}
	if off < 0 {
		var err error
		if r.IsAppend() {
			var fi fs.FileInfo
			if fi, err = r.file.Stat(); err == nil {
				off = fi.Size()
			}
		} else {
			off, err = r.file.Seek(0, io.SeekCurrent)
		}
		if err != nil {
			return 0, r.fileErr(err)
		}
	}
	if off >= limit {
		return 0, errFileSize
	}
	return int(min(int64(n), limit-off)), 0
}

// writeErr refuses a write through a file not opened for writing (the
// host would too: this does not rely on it), EISDIR for a directory.
func (r *rootFile) writeErr() experimentalsys.Errno {
	if r.closed {
		return experimentalsys.EBADF
	}
	if isDir, _ := r.IsDir(); isDir {
		return experimentalsys.EISDIR
	}
	if r.fs.readOnly || !forWriting(r.flag) {
		return experimentalsys.EBADF
	}
	return 0
}

// Close implements experimentalsys.File.
func (r *rootFile) Close() experimentalsys.Errno {
	if r.closed {
		return 0
	}
	r.closed = true
	if r.fs.files != nil {
		r.fs.files.Add(-1)
	}
	r.unlist()
	return errno(r.file.Close())
}
