package podman

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/procid"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux/eintr"
	"github.com/airlockhq/airlock/wire"
)

// A call's paths reach the container as staged mounts: each grant path,
// each protected path and each ancestor of a protected path inside a
// writable grant is opened without following symlinks, cloned as a
// detached mount (open_tree), idmapped to the container's user namespace
// (so container root reads and writes as the tree's owner, while being
// host uid IDBase), and attached under a root-only staging directory that
// Podman binds from. Staging from an open descriptor means a symlink
// planted later cannot redirect a mount; binding every ancestor of a
// protected path separately makes each one a mount point in the
// container, which the kernel refuses to rename or remove, so the
// protection cannot be carried away.

// stage is one call's staged mounts.
type stage struct {
	dir     string   // staging directory of the call
	mounted []string // staged paths to unmount, in order
	binds   []Bind
	exe     string
	proxy   string // staged proxy socket, or ""
	held    []string
	hidden  []string // container paths of the placeholders this call relies on
}

// usernsFD returns a descriptor of a user namespace with the container
// mapping, for idmapped mounts of what the broker stages itself (the
// airlock binary, the proxy's socket, placeholders).
func usernsFD() (int, error) {
	return usernsWith(ownerMap(0, IDCount), ownerMap(0, IDCount))
}

// ownerMap maps ids for an idmapped mount of a tree owned by id: the
// container's ids 0..IDCount-1 are host ids IDBase.. (args.go), and the
// mount shows the owner's files as container root's and host root's as the
// container's id owner (the two swapped), so what container root writes
// there belongs to the tree's owner on the host. An owner past the
// container's range takes container root's place alone; host root's files
// then show as nobody.
func ownerMap(owner, count uint32) []syscall.SysProcIDMap {
	m := func(inside, host, size uint32) syscall.SysProcIDMap {
		return syscall.SysProcIDMap{ContainerID: int(inside), HostID: int(IDBase + host), Size: int(size)}
	}
	switch {
	case owner == 0:
		return []syscall.SysProcIDMap{m(0, 0, count)}
	case owner >= count:
		return []syscall.SysProcIDMap{{ContainerID: int(owner), HostID: IDBase, Size: 1}, m(1, 1, count-1)}
	}
	maps := []syscall.SysProcIDMap{{ContainerID: int(owner), HostID: IDBase, Size: 1}, {ContainerID: 0, HostID: int(IDBase + owner), Size: 1}}
	if owner > 1 {
		maps = append(maps, m(1, 1, owner-1))
	}
	if owner+1 < count {
		maps = append(maps, m(owner+1, owner+1, count-owner-1))
	}
	return maps
}

// usernsWith returns a descriptor of a user namespace with the id maps
// uids and gids. The process made for it is stopped before it runs
// anything (ptrace) and killed once the descriptor is open.
func usernsWith(uids, gids []syscall.SysProcIDMap) (int, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p, err := os.StartProcess("/proc/self/exe", []string{"airlock-userns"}, &os.ProcAttr{
		Sys: &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER, UidMappings: uids, GidMappings: gids, Ptrace: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return -1, fmt.Errorf("creating the user namespace for idmapped mounts: %w", err)
	}
	defer func() { _ = p.Kill(); _, _ = p.Wait() }()
	fd, err := unix.Open("/proc/"+strconv.Itoa(p.Pid)+"/ns/user", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("opening the user namespace for idmapped mounts: %w", err)
	}
	return fd, nil
}

// openNoFollow opens p (absolute) as O_PATH, refusing any symlink on the way.
func openNoFollow(dirfd int, p string, beneath bool) (int, error) {
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	if beneath {
		how.Resolve |= unix.RESOLVE_BENEATH
	}
	return eintr.Openat2(dirfd, p, how)
}

// attach clones the mount at fd, idmaps it (read-only unless rw) and
// attaches it at path, which it creates as a directory or an empty file.
func (st *stage) attach(fd, userns int, path string, isDir, rw, recursive bool) error {
	if isDir {
		if err := os.Mkdir(path, 0o700); err != nil {
			return err
		}
	} else if err := os.WriteFile(path, nil, 0o600); err != nil {
		return err
	}
	flags := unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC | unix.AT_EMPTY_PATH
	if recursive {
		flags |= unix.AT_RECURSIVE
	}
	tfd, err := unix.OpenTree(fd, "", uint(flags))
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(tfd)
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Userns_fd: uint64(userns)}
	if !rw {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	}
	setFlags := unix.AT_EMPTY_PATH
	if recursive {
		setFlags |= unix.AT_RECURSIVE
	}
	if err := unix.MountSetattr(tfd, "", uint(setFlags), attr); err != nil {
		return fmt.Errorf("idmapping the mount (the filesystem must support idmapped mounts): %w", err)
	}
	if err := unix.MoveMount(tfd, "", unix.AT_FDCWD, path, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	st.mounted = append(st.mounted, path)
	return nil
}

// release unmounts and removes the staging directory.
func (st *stage) release() {
	for i := len(st.mounted) - 1; i >= 0; i-- {
		_ = unix.Unmount(st.mounted[i], unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
	}
	if st.dir != "" {
		removeStage(st.dir)
	}
}

func isDirFD(fd int) (bool, uint32, error) {
	var s unix.Stat_t
	if err := unix.Fstat(fd, &s); err != nil {
		return false, 0, err
	}
	return s.Mode&unix.S_IFMT == unix.S_IFDIR, s.Mode & unix.S_IFMT, nil
}

// placeholders counts, per host path, the running calls that rely on a
// placeholder this process created, and removes it (if still empty) when
// the last one ends.
type placeholders struct {
	mu   sync.Mutex
	refs map[string]int
	// journalDir and journal: see noteJournal.
	journalDir string
	journal    *os.File
}

func (p *placeholders) add(host string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refs == nil {
		p.refs = map[string]int{}
	}
	p.refs[host]++
}

func (p *placeholders) has(host string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refs[host] > 0
}

// release drops holds, deepest first, removing placeholders no call holds.
func (p *placeholders) release(held []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(held) - 1; i >= 0; i-- {
		h := held[i]
		if p.refs[h]--; p.refs[h] > 0 {
			continue
		}
		delete(p.refs, h)
		if len(p.refs) == 0 && p.journal != nil {
			defer p.journal.Truncate(0) // after the removals below
		}
		if root, err := os.OpenRoot(filepath.Dir(h)); err == nil {
			if fi, err := root.Lstat(filepath.Base(h)); err == nil && (fi.IsDir() || fi.Mode().IsRegular() && fi.Size() == 0) {
				_ = root.Remove(filepath.Base(h)) // a non-empty directory stays
			}
			root.Close()
		}
	}
}

// protectedPath is one Mask or ReadOnly path of a Spec.
type protectedPath struct {
	path string
	mask bool
	dir  bool // a directory when it must be created
}

// build stages spec's mounts under dir: the airlock binary, the grants,
// the protected paths (with the placeholders they need), the list of
// placeholders, and the proxy's socket.
func (b *Backend) build(spec *sandbox.Spec, dir string) (st *stage, err error) {
	st = &stage{dir: dir}
	s := &staging{b: b, st: st, targets: map[string]int{}}
	defer func() {
		s.close()
		if err != nil {
			st.release()
			b.holds.release(st.held)
		}
	}()
	if err := s.stageExe(); err != nil {
		return st, err
	}
	for _, m := range spec.Mounts {
		if err := s.stageGrant(m); err != nil {
			return st, err
		}
	}
	if err := s.pinNestedGrants(); err != nil {
		return st, err
	}
	all := append(append([]string(nil), spec.Masks...), spec.ReadOnly...)
	for _, pp := range protectedPaths(spec) {
		below := slices.ContainsFunc(all, func(o string) bool { return strings.HasPrefix(o, pp.path+"/") })
		if err := s.stageProtected(pp, below); err != nil {
			return st, err
		}
	}
	if err := s.listPlaceholders(); err != nil {
		return st, err
	}
	sortBinds(st.binds)
	if err := s.stageProxy(spec.Network.ProxySocket); err != nil {
		return st, err
	}
	return st, nil
}

// staging is one build under way.
type staging struct {
	b       *Backend
	st      *stage
	n       int            // staged names so far (next)
	targets map[string]int // container path -> index in st.binds
	grants  []granted
	// emptyDir and emptyFile, once made, are the staged sources that
	// mask a denied directory or file.
	emptyDir, emptyFile string
}

// granted is one grant path, open without following symlinks.
type granted struct {
	src, target string
	rw          bool
	fd          int
	userns      int // the idmapping of the tree's mounts (Backend.ownerNS)
}

// next returns a new name in the staging directory.
func (s *staging) next() string {
	s.n++
	return filepath.Join(s.st.dir, strconv.Itoa(s.n))
}

// addBind binds bd, replacing an earlier bind to the same target.
func (s *staging) addBind(bd Bind) {
	if i, ok := s.targets[bd.Target]; ok {
		s.st.binds[i] = bd
		return
	}
	s.targets[bd.Target] = len(s.st.binds)
	s.st.binds = append(s.st.binds, bd)
}

// close closes the grants' descriptors.
func (s *staging) close() {
	for _, g := range s.grants {
		unix.Close(g.fd)
	}
	s.grants = nil
}

// stageExe stages the airlock binary, the container's init.
func (s *staging) stageExe() error {
	efd, err := openNoFollow(unix.AT_FDCWD, s.b.exe, false)
	if err != nil {
		return fmt.Errorf("opening the airlock binary %q: %w", s.b.exe, err)
	}
	defer unix.Close(efd)
	if _, mode, serr := isDirFD(efd); serr != nil || mode != unix.S_IFREG {
		return fmt.Errorf("the airlock binary %q is not a regular file", s.b.exe)
	}
	s.st.exe = s.next()
	if err := s.st.attach(efd, s.b.userns, s.st.exe, false, false, false); err != nil {
		return fmt.Errorf("staging the airlock binary: %w", err)
	}
	return nil
}

// stageGrant checks and stages one grant path, read-write if m.Writable.
func (s *staging) stageGrant(m sandbox.Mount) error {
	t := m.Target
	if t == "" {
		t = m.Source
	}
	if !cleanAbs(m.Source) || !cleanAbs(t) || t == "/" {
		return fmt.Errorf("mount %q -> %q: paths must be clean, absolute and not /", m.Source, t)
	}
	for _, p := range []string{m.Source, t} {
		if unsafeInMount(p) {
			return &MountPathError{Path: p}
		}
	}
	fd, err := openNoFollow(unix.AT_FDCWD, m.Source, false)
	if err != nil {
		return fmt.Errorf("opening grant path %q without following symlinks: %w", m.Source, err)
	}
	g := granted{m.Source, t, m.Writable, fd, -1}
	s.grants = append(s.grants, g)
	isDir, mode, err := isDirFD(fd)
	if err == nil && mode == unix.S_IFLNK {
		err = fmt.Errorf("grant path %q is a symlink now, refused (grant paths are resolved before they are mounted)", m.Source)
	}
	if err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("reading the owner of grant path %q: %w", m.Source, err)
	}
	if g.userns, err = s.b.ownerNS(st.Uid, st.Gid); err != nil {
		return fmt.Errorf("grant path %q: %w", m.Source, err)
	}
	s.grants[len(s.grants)-1] = g
	p := s.next()
	if err := s.st.attach(fd, g.userns, p, isDir, m.Writable, true); err != nil {
		return fmt.Errorf("staging grant path %q: %w", m.Source, err)
	}
	s.addBind(Bind{Source: p, Target: t, Writable: m.Writable})
	return nil
}

// pinNestedGrants binds every ancestor of a grant path nested in a
// writable grant, between that grant's root and it, to itself, as
// stageProtected does for a protected path's and the native sandbox does
// for both: each becomes a mount point the container cannot rename.
// Without it a call renamed the parent of a read-only grant nested in a
// read-write one (mv a a2, for a read-only a/ro), which carried the
// read-only tree on the host to a2/ro, a name only the read-write grant
// covers, where every later call could write it; and it could then put a
// directory or a symlink of its own at a/ro.
func (s *staging) pinNestedGrants() error {
	for _, n := range slices.Clone(s.grants) {
		g, ok := s.holding(n.target)
		if !ok || !g.rw {
			continue
		}
		parts := strings.Split(strings.TrimPrefix(n.target, g.target+"/"), "/")
		for i := range len(parts) - 1 {
			sub := strings.Join(parts[:i+1], "/")
			target := filepath.Join(g.target, sub)
			if _, ok := s.targets[target]; ok {
				continue
			}
			fd, err := openNoFollow(g.fd, sub, true)
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
				err = errors.New("it is a symlink, refused (grant paths are resolved before they are mounted)")
			}
			if err != nil {
				return fmt.Errorf("grant path %q: its parent %s: %w", n.src, target, err)
			}
			isDir, mode, err := isDirFD(fd)
			if err == nil && mode == unix.S_IFLNK {
				err = errors.New("it is a symlink, refused (grant paths are resolved before they are mounted)")
			}
			if err == nil {
				p := s.next()
				if err = s.st.attach(fd, g.userns, p, isDir, true, true); err == nil {
					s.addBind(Bind{Source: p, Target: target, Writable: true})
				}
			}
			unix.Close(fd)
			if err != nil {
				return fmt.Errorf("grant path %q: its parent %s: %w", n.src, target, err)
			}
		}
	}
	return nil
}

// protectedPaths lists spec's denied paths, and its protected paths that
// are not denied too, sorted by path.
func protectedPaths(spec *sandbox.Spec) []protectedPath {
	var prot []protectedPath
	for _, p := range spec.Masks {
		prot = append(prot, protectedPath{path: p, mask: true})
	}
	for _, p := range spec.ReadOnly {
		if !slices.Contains(spec.Masks, p) {
			prot = append(prot, protectedPath{path: p, dir: slices.Contains(spec.ReadOnlyDirs, p)})
		}
	}
	slices.SortFunc(prot, func(a, b protectedPath) int { return strings.Compare(a.path, b.path) })
	return prot
}

// holding returns the grant whose tree holds the name p: of the grants p
// lies strictly below, the one with the longest target.
func (s *staging) holding(p string) (granted, bool) {
	best := -1
	for i, g := range s.grants {
		if strings.HasPrefix(p, g.target+"/") && (best < 0 || len(g.target) > len(s.grants[best].target)) {
			best = i
		}
	}
	if best < 0 {
		return granted{}, false
	}
	return s.grants[best], true
}

// stageProtected stages one protected path: each of its ancestors inside
// a writable grant becomes a bind of its own (a mount point the container
// cannot rename), and the path itself is masked (pp.mask) or bound
// read-only. below says another protected path lies below it, so that it
// must be a directory when made.
func (s *staging) stageProtected(pp protectedPath, below bool) error {
	if !cleanAbs(pp.path) {
		return fmt.Errorf("protected path %q must be clean and absolute", pp.path)
	}
	if unsafeInMount(pp.path) {
		return &MountPathError{Path: pp.path}
	}
	g, ok := s.holding(pp.path)
	if !ok {
		return nil // not visible in the container
	}
	parts := strings.Split(strings.TrimPrefix(pp.path, g.target+"/"), "/")
	for i := range parts {
		sub := strings.Join(parts[:i+1], "/")
		last := i == len(parts)-1
		fd, isDir, ok, err := s.openPart(g, pp, sub, !last || pp.dir || below)
		if err != nil {
			return fmt.Errorf("protected path %s: %w", pp.path, err)
		}
		if !ok {
			break
		}
		err = s.bindPart(g, pp, fd, isDir, filepath.Join(g.target, sub), last)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("protected path %s: %w", pp.path, err)
		}
	}
	return nil
}

// openPart opens sub, a path in grant g on the way to (or at) protected
// path pp, without following symlinks. When it is missing in a writable
// grant it is made, a directory when dirKind is set, as a placeholder this
// call holds; a placeholder another call made is held too. ok is false
// when nothing can be created there (a read-only tree, or a file above).
func (s *staging) openPart(g granted, pp protectedPath, sub string, dirKind bool) (fd int, isDir, ok bool, err error) {
	hold := func(host string) {
		s.b.holds.add(host)
		s.st.held = append(s.st.held, host)
		s.st.hidden = append(s.st.hidden, filepath.Join(g.target, sub))
	}
	host := filepath.Join(g.src, sub)
	fd, err = openNoFollow(g.fd, sub, true)
	if errors.Is(err, unix.ENOENT) {
		if !g.rw {
			return -1, false, false, nil // a read-only tree: nothing can be created there
		}
		s.b.holds.note(host)
		if err := s.b.placeholder(g.fd, sub, dirKind); err != nil {
			return -1, false, false, fmt.Errorf("creating a placeholder: %w", err)
		}
		hold(host)
		fd, err = openNoFollow(g.fd, sub, true)
	} else if err == nil && g.rw && s.b.holds.has(host) {
		hold(host) // another call's placeholder: keep it while this call runs
	}
	if errors.Is(err, unix.ENOTDIR) {
		return -1, false, false, nil // a file stands above it: nothing can be created there
	}
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
			return -1, false, false, fmt.Errorf("%s is a symlink, refused (remove it or use the native backend)", filepath.Join(g.target, sub))
		}
		return -1, false, false, err
	}
	isDir, mode, err := isDirFD(fd)
	if err == nil && mode == unix.S_IFLNK {
		err = fmt.Errorf("%s is a symlink, refused (remove it or use the native backend)", filepath.Join(g.target, sub))
	}
	if err != nil {
		unix.Close(fd)
		return -1, false, false, err
	}
	return fd, isDir, true, nil
}

// bindPart binds fd, open at container path target: an ancestor of a
// protected path (not last) is bound read-write to itself in a writable
// grant, a denied path is covered by an empty directory or file, and a
// protected path is bound read-only.
func (s *staging) bindPart(g granted, pp protectedPath, fd int, isDir bool, target string, last bool) error {
	var err error
	switch {
	case !last:
		if _, ok := s.targets[target]; ok || !g.rw {
			return nil
		}
		p := s.next()
		err = s.st.attach(fd, g.userns, p, isDir, true, false)
		s.addBind(Bind{Source: p, Target: target, Writable: true})
	case pp.mask && isDir:
		if s.emptyDir == "" {
			s.emptyDir = s.next()
			err = os.Mkdir(s.emptyDir, 0o555)
		}
		s.addBind(Bind{Source: s.emptyDir, Target: target})
	case pp.mask:
		if s.emptyFile == "" {
			s.emptyFile = s.next()
			err = os.WriteFile(s.emptyFile, nil, 0o444)
		}
		s.addBind(Bind{Source: s.emptyFile, Target: target})
	default:
		p := s.next()
		err = s.st.attach(fd, g.userns, p, isDir, false, false)
		s.addBind(Bind{Source: p, Target: target})
	}
	return err
}

// listPlaceholders stages the list of the placeholders this call relies
// on, which the tools leave out of what they list.
func (s *staging) listPlaceholders() error {
	if len(s.st.hidden) == 0 {
		return nil
	}
	slices.Sort(s.st.hidden)
	p := s.next()
	if err := os.WriteFile(p, []byte(strings.Join(slices.Compact(s.st.hidden), "\n")+"\n"), 0o444); err != nil {
		return fmt.Errorf("listing the placeholders: %w", err)
	}
	s.addBind(Bind{Source: p, Target: wire.PlaceholderList})
	return nil
}

// sortBinds orders binds shallowest target first (then by target), so
// that each lands on top of the binds it is nested in.
func sortBinds(binds []Bind) {
	slices.SortStableFunc(binds, func(a, b Bind) int {
		if c := strings.Count(a.Target, "/") - strings.Count(b.Target, "/"); c != 0 {
			return c
		}
		return strings.Compare(a.Target, b.Target)
	})
}

// stageProxy stages the egress proxy's socket p, if any: the socket
// alone, read-only (connect(2) needs no writable mount), as on the
// native backend. Not its directory: mounted read-write, and idmapped so
// that container root was its owner, it let a call write without bound
// on the host outside every grant, and remove or replace the socket.
func (s *staging) stageProxy(p string) error {
	if p == "" {
		return nil
	}
	if !cleanAbs(p) {
		return fmt.Errorf("proxy socket %q must be a clean absolute path", p)
	}
	fd, err := openNoFollow(unix.AT_FDCWD, p, false)
	if err != nil {
		return fmt.Errorf("opening the proxy's socket: %w", err)
	}
	defer unix.Close(fd)
	if _, mode, err := isDirFD(fd); err != nil || mode != unix.S_IFSOCK {
		return fmt.Errorf("the proxy's socket %q is not a socket", p)
	}
	s.st.proxy = s.next()
	if err := s.st.attach(fd, s.b.userns, s.st.proxy, false, false, false); err != nil {
		return fmt.Errorf("staging the proxy's socket: %w", err)
	}
	return nil
}

// placeholder creates sub beneath the tree at dirfd: a directory when dir
// is set, else an empty file. It does not follow symlinks.
func (b *Backend) placeholder(dirfd int, sub string, dir bool) error {
	parent, name := filepath.Split(sub)
	pfd := dirfd
	if parent != "" {
		fd, err := eintr.Openat2(dirfd, strings.TrimSuffix(parent, "/"), &unix.OpenHow{Flags: unix.O_DIRECTORY | unix.O_CLOEXEC | unix.O_NOFOLLOW,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		pfd = fd
	}
	if dir {
		err := unix.Mkdirat(pfd, name, 0o755)
		if errors.Is(err, unix.EEXIST) {
			return nil
		}
		if err != nil {
			return err
		}
		// Marked as airlock's, so a later start may remove it once this
		// process is gone (sweepPlaceholders).
		if fd, err := unix.Openat(pfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
			mark(fd)
			unix.Close(fd)
		}
		return nil
	}
	fd, err := unix.Openat(pfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if errors.Is(err, unix.EEXIST) {
		return nil
	}
	if err != nil {
		return err
	}
	mark(fd)
	return unix.Close(fd)
}

func cleanAbs(p string) bool { return filepath.IsAbs(p) && filepath.Clean(p) == p }

// stagePrefix names a backend's staging directory: PREFIX PID-START-RANDOM
// (stageName; PREFIX PID-RANDOM where the start time is unknown, and from
// earlier versions).
const stagePrefix = "airlock-podman-"

// stageName is the MkdirTemp pattern of the staging directory of the
// backend in process id. The start time tells a dead backend's directory
// from a live one's once its pid is reused.
func stageName(id procid.ID) string { return stagePrefix + string(id) + "-" }

// stageOwnerAlive reports whether the process that made the staging
// directory named stagePrefix+rest still runs.
func stageOwnerAlive(rest string) bool {
	f := strings.Split(rest, "-")
	if len(f) == 3 {
		return procid.ID(f[0] + "-" + f[1]).Alive()
	}
	pid, err := strconv.Atoi(f[0])
	return err != nil || pid <= 0 || procid.ID(f[0]).Alive()
}

// removeStage removes a staging directory without ever descending into a
// mount: each entry is removed on its own (a directory only if empty), so
// a staged grant that is still mounted, which holds the user's files, is
// left alone rather than emptied.
func removeStage(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if err := os.Remove(p); err != nil && e.IsDir() && (strings.HasPrefix(e.Name(), "call-") || e.Name() == hooksDir) {
			removeStage(p) // a call's directory, or the hooks, of the backend's own
		}
	}
	_ = os.Remove(dir)
}

// sweepStages unmounts and removes the staging directories under parent
// of backends whose process is gone (a broker killed with SIGKILL leaves
// its staged mounts attached), judged by pid and start time: by pid
// alone, a directory whose pid had been reused stayed mounted for good.
func sweepStages(parent string, log interface{ Debug(string, ...any) }) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), stagePrefix)
		if !ok || !e.IsDir() {
			continue
		}
		if stageOwnerAlive(rest) {
			continue // not ours, or its backend's process lives
		}
		dir := filepath.Join(parent, e.Name())
		var points []string
		for _, line := range strings.Split(string(mounts), "\n") {
			f := strings.Fields(line)
			if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
				points = append(points, f[4])
			}
		}
		slices.Sort(points)
		for i := len(points) - 1; i >= 0; i-- {
			if err := unix.Unmount(points[i], unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW); err != nil {
				log.Debug("unmounting a dead backend's staged mount", "path", points[i], "err", err)
			}
		}
		removeStage(dir)
	}
}
