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
	proxy   string // staged proxy directory, or ""
	held    []string
	hidden  []string // container paths of the placeholders this call relies on
}

// usernsFD returns a descriptor of a user namespace with the container
// mapping, for idmapped mounts. The process made for it is stopped
// before it runs anything (ptrace) and killed once the descriptor is open.
func usernsFD() (int, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	m := []syscall.SysProcIDMap{{ContainerID: 0, HostID: IDBase, Size: IDCount}}
	p, err := os.StartProcess("/proc/self/exe", []string{"airlock-userns"}, &os.ProcAttr{
		Sys: &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER, UidMappings: m, GidMappings: m, Ptrace: true, Pdeathsig: syscall.SIGKILL},
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

// build stages spec's mounts under dir.
func (b *Backend) build(spec *sandbox.Spec, dir string) (st *stage, err error) {
	st = &stage{dir: dir}
	defer func() {
		if err != nil {
			st.release()
			b.holds.release(st.held)
		}
	}()
	n := 0
	next := func() string { n++; return filepath.Join(dir, strconv.Itoa(n)) }

	// The airlock binary.
	efd, err := openNoFollow(unix.AT_FDCWD, b.exe, false)
	if err != nil {
		return st, fmt.Errorf("opening the airlock binary %q: %w", b.exe, err)
	}
	if _, mode, serr := isDirFD(efd); serr != nil || mode != unix.S_IFREG {
		unix.Close(efd)
		return st, fmt.Errorf("the airlock binary %q is not a regular file", b.exe)
	}
	st.exe = next()
	err = st.attach(efd, b.userns, st.exe, false, false, false)
	unix.Close(efd)
	if err != nil {
		return st, fmt.Errorf("staging the airlock binary: %w", err)
	}

	type granted struct {
		src, target string
		rw          bool
		fd          int
	}
	var grants []granted
	defer func() {
		for _, g := range grants {
			unix.Close(g.fd)
		}
	}()
	targets := map[string]int{} // target -> index in st.binds
	addBind := func(bd Bind) {
		if i, ok := targets[bd.Target]; ok {
			st.binds[i] = bd
			return
		}
		targets[bd.Target] = len(st.binds)
		st.binds = append(st.binds, bd)
	}
	for _, m := range spec.Mounts {
		t := m.Target
		if t == "" {
			t = m.Source
		}
		if !cleanAbs(m.Source) || !cleanAbs(t) || t == "/" {
			return st, fmt.Errorf("mount %q -> %q: paths must be clean, absolute and not /", m.Source, t)
		}
		for _, p := range []string{m.Source, t} {
			if unsafeInMount(p) {
				return st, &MountPathError{Path: p}
			}
		}
		fd, err := openNoFollow(unix.AT_FDCWD, m.Source, false)
		if err != nil {
			return st, fmt.Errorf("opening grant path %q without following symlinks: %w", m.Source, err)
		}
		grants = append(grants, granted{m.Source, t, m.Writable, fd})
		isDir, mode, err := isDirFD(fd)
		if err == nil && mode == unix.S_IFLNK {
			err = fmt.Errorf("grant path %q is a symlink now, refused (grant paths are resolved before they are mounted)", m.Source)
		}
		if err != nil {
			return st, err
		}
		p := next()
		if err := st.attach(fd, b.userns, p, isDir, m.Writable, true); err != nil {
			return st, fmt.Errorf("staging grant path %q: %w", m.Source, err)
		}
		addBind(Bind{Source: p, Target: t, Writable: m.Writable})
	}

	var prot []protectedPath
	for _, p := range spec.Masks {
		prot = append(prot, protectedPath{path: p, mask: true})
	}
	for _, p := range spec.ReadOnly {
		if !slices.Contains(spec.Masks, p) {
			prot = append(prot, protectedPath{path: p, dir: slices.Contains(spec.ReadOnlyDirs, p)})
		}
	}
	all := append(append([]string(nil), spec.Masks...), spec.ReadOnly...)
	slices.SortFunc(prot, func(a, b protectedPath) int { return strings.Compare(a.path, b.path) })
	var emptyDir, emptyFile string
	for _, pp := range prot {
		if !cleanAbs(pp.path) {
			return st, fmt.Errorf("protected path %q must be clean and absolute", pp.path)
		}
		if unsafeInMount(pp.path) {
			return st, &MountPathError{Path: pp.path}
		}
		best := -1
		for i, g := range grants {
			if strings.HasPrefix(pp.path, g.target+"/") && (best < 0 || len(g.target) > len(grants[best].target)) {
				best = i
			}
		}
		if best < 0 {
			continue // not visible in the container
		}
		g := grants[best]
		parts := strings.Split(strings.TrimPrefix(pp.path, g.target+"/"), "/")
		below := slices.ContainsFunc(all, func(o string) bool { return strings.HasPrefix(o, pp.path+"/") })
		for i := range parts {
			sub := strings.Join(parts[:i+1], "/")
			last := i == len(parts)-1
			fd, err := openNoFollow(g.fd, sub, true)
			if errors.Is(err, unix.ENOENT) {
				if !g.rw {
					break // a read-only tree: nothing can be created there
				}
				dirKind := !last || pp.dir || below
				if err := b.placeholder(g.fd, sub, dirKind); err != nil {
					return st, fmt.Errorf("protected path %s: creating a placeholder: %w", pp.path, err)
				}
				host := filepath.Join(g.src, sub)
				b.holds.add(host)
				st.held = append(st.held, host)
				st.hidden = append(st.hidden, filepath.Join(g.target, sub))
				fd, err = openNoFollow(g.fd, sub, true)
			} else if host := filepath.Join(g.src, sub); err == nil && g.rw && b.holds.has(host) {
				b.holds.add(host) // another call's placeholder: keep it while this call runs
				st.held = append(st.held, host)
				st.hidden = append(st.hidden, filepath.Join(g.target, sub))
			}
			if errors.Is(err, unix.ENOTDIR) {
				break // a file stands above it: nothing can be created there
			}
			if err != nil {
				if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
					return st, fmt.Errorf("protected path %s: %s is a symlink, refused (remove it or use the native backend)", pp.path, filepath.Join(g.target, sub))
				}
				return st, fmt.Errorf("protected path %s: %w", pp.path, err)
			}
			isDir, mode, err := isDirFD(fd)
			if err == nil && mode == unix.S_IFLNK {
				err = fmt.Errorf("%s is a symlink, refused (remove it or use the native backend)", filepath.Join(g.target, sub))
			}
			if err != nil {
				unix.Close(fd)
				return st, fmt.Errorf("protected path %s: %w", pp.path, err)
			}
			target := filepath.Join(g.target, sub)
			switch {
			case !last:
				if !g.rw {
					unix.Close(fd)
					continue
				}
				if _, ok := targets[target]; ok {
					unix.Close(fd)
					continue
				}
				p := next()
				err = st.attach(fd, b.userns, p, isDir, true, false)
				addBind(Bind{Source: p, Target: target, Writable: true})
			case pp.mask:
				if isDir {
					if emptyDir == "" {
						emptyDir = next()
						err = os.Mkdir(emptyDir, 0o555)
					}
					addBind(Bind{Source: emptyDir, Target: target})
				} else {
					if emptyFile == "" {
						emptyFile = next()
						err = os.WriteFile(emptyFile, nil, 0o444)
					}
					addBind(Bind{Source: emptyFile, Target: target})
				}
			default:
				p := next()
				err = st.attach(fd, b.userns, p, isDir, false, false)
				addBind(Bind{Source: p, Target: target})
			}
			unix.Close(fd)
			if err != nil {
				return st, fmt.Errorf("protected path %s: %w", pp.path, err)
			}
		}
	}
	if len(st.hidden) > 0 {
		// The tools leave airlock's placeholders out of what they list.
		slices.Sort(st.hidden)
		p := next()
		if err := os.WriteFile(p, []byte(strings.Join(slices.Compact(st.hidden), "\n")+"\n"), 0o444); err != nil {
			return st, fmt.Errorf("listing the placeholders: %w", err)
		}
		addBind(Bind{Source: p, Target: wire.PlaceholderList})
	}
	slices.SortStableFunc(st.binds, func(a, b Bind) int {
		if c := strings.Count(a.Target, "/") - strings.Count(b.Target, "/"); c != 0 {
			return c
		}
		return strings.Compare(a.Target, b.Target)
	})

	if p := spec.Network.ProxySocket; p != "" {
		if !cleanAbs(p) {
			return st, fmt.Errorf("proxy socket %q must be a clean absolute path", p)
		}
		fd, err := openNoFollow(unix.AT_FDCWD, filepath.Dir(p), false)
		if err != nil {
			return st, fmt.Errorf("opening the proxy's directory: %w", err)
		}
		st.proxy = next()
		err = st.attach(fd, b.userns, st.proxy, true, true, false)
		unix.Close(fd)
		if err != nil {
			return st, fmt.Errorf("staging the proxy's directory: %w", err)
		}
	}
	return st, nil
}

// placeholder creates sub beneath the tree at dirfd: a directory when dir
// is set, else an empty file. It does not follow symlinks.
func (b *Backend) placeholder(dirfd int, sub string, dir bool) error {
	parent, name := filepath.Split(sub)
	pfd := dirfd
	if parent != "" {
		fd, err := unix.Openat2(dirfd, strings.TrimSuffix(parent, "/"), &unix.OpenHow{Flags: unix.O_DIRECTORY | unix.O_CLOEXEC | unix.O_NOFOLLOW,
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
		return err
	}
	fd, err := unix.Openat(pfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if errors.Is(err, unix.EEXIST) {
		return nil
	}
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

func cleanAbs(p string) bool { return filepath.IsAbs(p) && filepath.Clean(p) == p }

// stagePrefix names a backend's staging directory: PREFIX PID-RANDOM.
const stagePrefix = "airlock-podman-"

// removeStage removes a staging directory without ever descending into a
// mount: each entry is removed on its own (a directory only if empty), so
// a staged grant that is still mounted, which holds the user's files, is
// left alone rather than emptied.
func removeStage(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if err := os.Remove(p); err != nil && e.IsDir() && strings.HasPrefix(e.Name(), "call-") {
			removeStage(p) // a call's directory of the backend's own
		}
	}
	_ = os.Remove(dir)
}

// sweepStages unmounts and removes the staging directories under parent
// of backends whose process is gone (a broker killed with SIGKILL leaves
// its staged mounts attached).
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
		pidS, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidS)
		if err != nil || pid <= 0 || syscall.Kill(pid, 0) == nil || pid == os.Getpid() {
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
