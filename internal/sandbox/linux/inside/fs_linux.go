package inside

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/sandbox/linux/eintr"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
	"github.com/airlockhq/airlock/internal/sandbox/peruser"
	"github.com/airlockhq/airlock/wire"
)

// stage is where the new root is assembled before pivot_root: a tmpfs
// mounted over the host's /tmp in the init's private mount namespace.
// Every grant source is opened before this mount hides anything.
const stage = "/tmp"

// systemDirs are bound read-only into every sandbox when present; a symlink
// (merged /usr) is recreated as the same symlink.
var systemDirs = []string{"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"}

// etcEntries are the /etc entries a shell, libc, curl, git and python need.
// passwd, group, hosts and hostname are generated, never the host's.
// /etc/environment is not one: only PAM reads it, which no sandbox runs,
// and admins keep proxy credentials there.
var etcEntries = []string{
	"alternatives", "ssl", "ca-certificates", "ca-certificates.conf",
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "nsswitch.conf",
	"localtime", "timezone", "mime.types", "host.conf", "gitconfig",
	"bash.bashrc", "profile", "inputrc", "locale.alias",
	"protocols", "services", "magic", "python3", "python3.11", "terminfo",
}

// devNodes are the host devices bound into /dev.
var devNodes = []string{"null", "zero", "full", "random", "urandom"}

// builder assembles the new root.
type builder struct {
	cfg  *initproto.Config
	root int // O_PATH fd of the stage tmpfs
	// candidates are placeholderCandidates(cfg), once worked out
	// (candidatePaths).
	candidates []string
	newAPI     bool
	created    []string
	devNull    int // O_PATH fd of the host's /dev/null, used to mask files
	empty      int // O_PATH fd of an empty read-only file on the stage
	// mounted are the sandbox paths of the masks and protected paths
	// mounted over, for pinning their ancestors.
	mounted []string
	// maskedMarked are the denied paths whose mask covers another call's
	// placeholder, in a read-only sandbox (protect, hold).
	maskedMarked []string
	// readOnly: every mount is read-only (protect), so hold notes the
	// placeholders its masks cover (maskedMarked) for the tools to skip.
	readOnly bool
}

// openSource opens a grant source without following any symlink: sources
// are fully resolved by the broker, so a symlink anywhere means the tree
// changed since (hostile cases 3 and 7).
func openSource(p string) (int, error) {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return -1, fmt.Errorf("source %q is not a clean absolute path", p)
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ENOSYS) {
		fd, err = unix.Open(p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil {
			if real, rerr := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); rerr != nil || real != p {
				unix.Close(fd)
				return -1, fmt.Errorf("opening %q: path changed (now %q)", p, real)
			}
		}
	}
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return -1, fmt.Errorf("opening %q: a component is a symlink (refused): %w", p, err)
		}
		return -1, fmt.Errorf("opening %q: %w", p, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("stat %q: %w", p, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		unix.Close(fd)
		return -1, fmt.Errorf("opening %q: is a symlink (refused)", p)
	}
	return fd, nil
}

func isDirFD(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
}

// rel turns a sandbox path into one relative to the new root.
func rel(p string) string { return strings.TrimPrefix(filepath.Clean(p), "/") }

// walk opens (creating when create is set) each directory component of p
// below dirfd without following symlinks, and returns an O_PATH fd of the
// last one. The first directory it creates is recorded when record is set.
func (b *builder) walk(p string, create, record bool) (int, error) {
	cur, err := unix.Dup(b.root)
	if err != nil {
		return -1, err
	}
	if p == "" || p == "." {
		return cur, nil
	}
	sofar := ""
	for _, c := range strings.Split(p, "/") {
		sofar = filepath.Join(sofar, c)
		next, err := openBeneath(cur, c, unix.O_PATH|unix.O_DIRECTORY)
		if errors.Is(err, unix.ENOENT) && create {
			if err := unix.Mkdirat(cur, c, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				unix.Close(cur)
				return -1, fmt.Errorf("creating /%s: %w", sofar, err)
			}
			if record {
				b.created = append(b.created, "/"+sofar)
			}
			next, err = openBeneath(cur, c, unix.O_PATH|unix.O_DIRECTORY)
		}
		unix.Close(cur)
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				return -1, fmt.Errorf("opening /%s: a symlink or not a directory (refused): %w", sofar, err)
			}
			return -1, fmt.Errorf("opening /%s: %w", sofar, err)
		}
		cur = next
	}
	return cur, nil
}

// openBeneath opens name below dirfd without following any symlink.
func openBeneath(dirfd int, name string, flags uint64) (int, error) {
	fd, err := eintr.Openat2(dirfd, name, &unix.OpenHow{
		Flags:   flags | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_BENEATH,
	})
	if errors.Is(err, unix.ENOSYS) {
		return eintr.Value(func() (int, error) {
			return unix.Openat(dirfd, name, int(flags)|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		})
	}
	return fd, err
}

// target opens the mount point for sandbox path p, creating it as a
// directory or an empty file (isDir) when missing.
func (b *builder) target(p string, isDir, record bool) (int, error) {
	r := rel(p)
	parent, err := b.walk(filepath.Dir(r), true, record)
	if err != nil {
		return -1, err
	}
	defer unix.Close(parent)
	name := filepath.Base(r)
	if r == "" {
		return unix.Dup(b.root)
	}
	fd, err := openBeneath(parent, name, unix.O_PATH)
	if errors.Is(err, unix.ENOENT) {
		if isDir {
			err = unix.Mkdirat(parent, name, 0o755)
		} else {
			var f int
			f, err = unix.Openat(parent, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
			if err == nil {
				// A placeholder holds what one of its name is made with
				// (a commondir git can read), as the host's do.
				if c := wire.PlaceholderContent(name); record && len(c) > 0 {
					_, err = unix.Pwrite(f, c, 0)
				}
				unix.Close(f)
			}
		}
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, fmt.Errorf("creating mount point %s: %w", p, err)
		}
		if record {
			b.created = append(b.created, p)
		}
		fd, err = openBeneath(parent, name, unix.O_PATH)
	}
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return -1, fmt.Errorf("mount point %s is a symlink (refused): %w", p, err)
		}
		return -1, fmt.Errorf("opening mount point %s: %w", p, err)
	}
	return fd, nil
}

func procFD(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// bind mounts the tree at src (an O_PATH fd) on dst (an O_PATH fd),
// recursively, with attrs (MOUNT_ATTR_*) applied to the whole tree.
func (b *builder) bind(src, dst int, attrs uint64) error {
	if b.newAPI {
		t, err := unix.OpenTree(src, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
		if err == nil {
			defer unix.Close(t)
			if attrs != 0 {
				if err := unix.MountSetattr(t, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: attrs}); err != nil {
					return fmt.Errorf("mount_setattr: %w", err)
				}
			}
			if err := unix.MoveMount(t, "", dst, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
				return fmt.Errorf("move_mount: %w", err)
			}
			return nil
		}
		if !errors.Is(err, unix.ENOSYS) {
			return fmt.Errorf("open_tree: %w", err)
		}
		b.newAPI = false
	}
	// Classic fallback: bind through the fds' magic links, then remount
	// each flag (only the top mount of the tree gets them).
	if err := unix.Mount(procFD(src), procFD(dst), "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind mount: %w", err)
	}
	if attrs != 0 {
		if err := unix.Mount("", procFD(dst), "", unix.MS_BIND|unix.MS_REMOUNT|msFlags(attrs), ""); err != nil {
			return fmt.Errorf("remounting bind: %w", err)
		}
	}
	return nil
}

// msFlags turns MOUNT_ATTR_ flags into the mount(2) flags of the same
// meaning.
func msFlags(attrs uint64) uintptr {
	var fl uintptr
	for _, f := range []struct {
		attr uint64
		ms   uintptr
	}{{unix.MOUNT_ATTR_RDONLY, unix.MS_RDONLY}, {unix.MOUNT_ATTR_NOSUID, unix.MS_NOSUID}, {unix.MOUNT_ATTR_NODEV, unix.MS_NODEV}, {unix.MOUNT_ATTR_NOEXEC, unix.MS_NOEXEC}} {
		if attrs&f.attr != 0 {
			fl |= f.ms
		}
	}
	return fl
}

// walkPath opens an existing sandbox path below the stage without
// following symlinks.
func (b *builder) walkPath(p string) (int, error) {
	r := rel(p)
	if r == "" {
		return unix.Dup(b.root)
	}
	fd, err := openBeneath(b.root, r, unix.O_PATH)
	if errors.Is(err, unix.ENAMETOOLONG) {
		// Deeper than PATH_MAX (a tree a sandbox's shell made one
		// relative mkdir at a time): one component at a time.
		fd, err = b.walkLong(r)
	}
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
		unix.Close(fd)
		return -1, fmt.Errorf("%s is a symlink (refused): %w", p, unix.ELOOP)
	}
	return fd, nil
}

// walkLong opens r (relative to the stage) as walkPath does, one
// component at a time: every ancestor a directory, no symlink followed.
func (b *builder) walkLong(r string) (int, error) {
	parent, err := b.walk(filepath.Dir(r), false, false)
	if err != nil {
		return -1, err
	}
	defer unix.Close(parent)
	return openBeneath(parent, filepath.Base(r), unix.O_PATH)
}

// tmpfs mounts a fresh tmpfs on dst (an O_PATH fd).
func (b *builder) tmpfs(dst int, opts string, attrs uint64) error {
	if err := unix.Mount("tmpfs", procFD(dst), "tmpfs", msFlags(attrs), opts); err != nil {
		return fmt.Errorf("mounting tmpfs: %w", err)
	}
	return nil
}

// build assembles the new root on the stage, all but the protection of
// denied and protected paths (see protect), which may wait for a claim
// (initproto.Config.Claim). The caller calls close once done with b.
//
// The steps, in order: open every host source (hostFiles), mount the
// stage, then on it the system directories, /etc, /tmp, the grants, the
// proxy socket, /dev and /proc. protect, called by setup after the claim
// of a warm sandbox, hides the denied paths and makes the protected ones
// read-only.
func build(cfg *initproto.Config) (_ *builder, err error) {
	b := &builder{cfg: cfg, newAPI: true, root: -1, devNull: -1, empty: -1}
	defer func() {
		if err != nil {
			b.close()
		}
	}()
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, refused(initproto.StepMountNS, fmt.Errorf("making / private: %w", err))
	}
	h, err := openHost(cfg)
	if err != nil {
		return nil, err
	}
	defer h.close()
	if b.devNull, err = unix.FcntlInt(uintptr(h.devs["null"]), unix.F_DUPFD_CLOEXEC, 0); err != nil {
		return nil, fmt.Errorf("duplicating /dev/null: %w", err)
	}
	for _, step := range []func() error{
		b.mountStage,
		func() error { return b.mountSystem(h.sys) },
		func() error { return b.mountEtc(h.etc) },
		b.mountTmp,
		func() error { return b.mountGrants(h.srcs) },
		func() error { return b.mountProxy(h.proxy) },
		func() error { return b.buildDev(h.devs) },
		b.mountProc,
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// hostFiles are O_PATH fds of everything build takes from the host, all
// opened before the stage hides any of it.
type hostFiles struct {
	srcs  []int // cfg.Mounts' sources, in order
	proxy int   // cfg.ProxySocket, or -1
	// sys, etc and devs are the systemDirs, etcEntries and devNodes by
	// name; the first two hold only those the host has.
	sys, etc, devs map[string]int
}

// openHost opens every grant source, the proxy socket, and the host's
// system directories, /etc entries and devices.
func openHost(cfg *initproto.Config) (_ *hostFiles, err error) {
	h := &hostFiles{proxy: -1, sys: map[string]int{}, etc: map[string]int{}, devs: map[string]int{}}
	defer func() {
		if err != nil {
			h.close()
		}
	}()
	for _, m := range cfg.Mounts {
		fd, err := openSource(m.Source)
		if err != nil {
			return nil, err
		}
		h.srcs = append(h.srcs, fd)
	}
	if cfg.ProxySocket != "" {
		fd, err := openSource(cfg.ProxySocket)
		if err != nil {
			return nil, fmt.Errorf("proxy socket: %w", err)
		}
		h.proxy = fd
	}
	openAll := func(dir string, names []string, into map[string]int, required bool) error {
		for _, n := range names {
			fd, err := unix.Open(dir+n, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				if required {
					return fmt.Errorf("opening %s%s: %w", dir, n, err)
				}
				continue
			}
			into[n] = fd
		}
		return nil
	}
	_ = openAll("/", systemDirs, h.sys, false)
	_ = openAll("/etc/", etcEntries, h.etc, false)
	if err := openAll("/dev/", devNodes, h.devs, true); err != nil {
		return nil, err
	}
	return h, nil
}

func (h *hostFiles) close() {
	for _, fd := range h.srcs {
		unix.Close(fd)
	}
	if h.proxy >= 0 {
		unix.Close(h.proxy)
	}
	for _, m := range []map[string]int{h.sys, h.etc, h.devs} {
		for _, fd := range m {
			unix.Close(fd)
		}
	}
}

// mountStage mounts the stage, a small tmpfs that becomes /, and makes
// the empty file protect mounts over odd files.
func (b *builder) mountStage() error {
	if err := unix.Mount("tmpfs", stage, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m,nr_inodes=4096"); err != nil {
		return fmt.Errorf("mounting the root tmpfs on %s: %w", stage, err)
	}
	root, err := unix.Open(stage, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening the new root: %w", err)
	}
	b.root = root
	return b.makeEmpty()
}

// mountSystem binds the host's system directories read-only, nosuid and
// nodev; a symlink (merged /usr) is recreated as the same symlink.
func (b *builder) mountSystem(sys map[string]int) error {
	for _, d := range systemDirs {
		fd, ok := sys[d]
		if !ok {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fmt.Errorf("stat /%s: %w", d, err)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			link, err := os.Readlink("/" + d)
			if err != nil {
				return fmt.Errorf("reading link /%s: %w", d, err)
			}
			if err := unix.Symlinkat(link, b.root, d); err != nil {
				return fmt.Errorf("linking /%s: %w", d, err)
			}
			continue
		}
		if err := b.bindAt(fd, "/"+d, true, roAttrs); err != nil {
			return fmt.Errorf("mounting /%s read-only: %w", d, err)
		}
	}
	return nil
}

// generatedEtc are the /etc files made for the sandbox, never the host's.
func generatedEtc(hostname string) map[string]string {
	return map[string]string{
		"passwd":   "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"group":    "root:x:0:\nnogroup:x:65534:\n",
		"hosts":    "127.0.0.1\tlocalhost " + hostname + "\n::1\tlocalhost ip6-localhost ip6-loopback\n",
		"hostname": hostname + "\n",
	}
}

// mountEtc makes /etc: the generated files, and the host entries in etc
// bound read-only (a symlink recreated as the same symlink), without what
// in them only their owner and group may read.
//
// An entry holds such files now and then: /etc/ssl/private holds the
// host's TLS keys (root, group ssl-cert, mode 0710). Under a root broker
// the sandbox's uid 0 is host uid 0, their owner, and under any broker
// the sandbox keeps the broker's groups, so each such file or directory
// is masked (an entry that is one is left out), and the sandbox reads in
// /etc what any user may.
func (b *builder) mountEtc(etc map[string]int) error {
	if err := unix.Mkdirat(b.root, "etc", 0o755); err != nil {
		return fmt.Errorf("creating /etc: %w", err)
	}
	for name, content := range generatedEtc(b.cfg.Hostname) {
		if err := writeAt(b.root, "etc/"+name, content); err != nil {
			return err
		}
	}
	var buf []byte // maskUnreadable's
	for _, e := range etcEntries {
		fd, ok := etc[e]
		if !ok {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			continue
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			link, err := os.Readlink("/etc/" + e)
			if err == nil {
				err = unix.Symlinkat(link, b.root, "etc/"+e)
			}
			if err != nil {
				return fmt.Errorf("linking /etc/%s: %w", e, err)
			}
		case unix.S_IFDIR, unix.S_IFREG:
			if !othersMayRead(st.Mode) {
				continue
			}
			if err := b.bindAt(fd, "/etc/"+e, st.Mode&unix.S_IFMT == unix.S_IFDIR, roAttrs); err != nil {
				return fmt.Errorf("mounting /etc/%s read-only: %w", e, err)
			}
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				if buf == nil {
					buf = make([]byte, 32<<10)
				}
				if err := b.maskUnreadable("/etc/"+e, buf); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// othersMayRead reports whether a user neither the owner nor in the
// group of a file or directory of mode may read it (and, a directory,
// enter it).
func othersMayRead(mode uint32) bool {
	if mode&unix.S_IFMT == unix.S_IFDIR {
		return mode&0o005 == 0o005
	}
	return mode&0o004 != 0
}

// maskUnreadable masks every file and directory below the sandbox
// directory dir that others may not read (othersMayRead): a directory
// with an empty read-only tmpfs, anything else with an empty file. The
// entries are read with getdents and only those that are not symlinks
// (most of /etc/ssl/certs and /etc/alternatives are) looked at: this is on
// the clock of every call's start. buf is its getdents buffer.
func (b *builder) maskUnreadable(dir string, buf []byte) error {
	fd, err := b.walkPath(dir)
	if err != nil {
		return fmt.Errorf("opening %s: %w", dir, err)
	}
	d, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	unix.Close(fd)
	if err != nil {
		return fmt.Errorf("opening %s: %w", dir, err)
	}
	var masks, subdirs []string
	for {
		n, err := eintr.Value(func() (int, error) { return unix.Getdents(d, buf) })
		if err != nil {
			unix.Close(d)
			return fmt.Errorf("listing %s: %w", dir, err)
		}
		if n == 0 {
			break
		}
		for off := 0; off+19 <= n; {
			// struct linux_dirent64: ino (8), off (8), reclen (2),
			// type (1), then the name, NUL-terminated.
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			if reclen < 19 || off+reclen > n {
				break
			}
			typ, name := buf[off+18], buf[off+19:off+reclen]
			off += reclen
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if typ == unix.DT_LNK || string(name) == "." || string(name) == ".." {
				continue // a symlink is readable; its target is checked where it lies
			}
			var st unix.Stat_t
			if unix.Fstatat(d, string(name), &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue
			}
			switch p := dir + "/" + string(name); {
			case !othersMayRead(st.Mode):
				masks = append(masks, p)
			case st.Mode&unix.S_IFMT == unix.S_IFDIR:
				subdirs = append(subdirs, p)
			}
		}
	}
	unix.Close(d)
	for _, p := range masks {
		fd, err := b.walkPath(p)
		if err != nil {
			return fmt.Errorf("opening %s: %w", p, err)
		}
		var st unix.Stat_t
		if err = unix.Fstat(fd, &st); err == nil {
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				err = b.tmpfs(fd, "mode=0555,size=4k,nr_inodes=1", maskAttrs)
			} else {
				err = b.bind(b.empty, fd, maskAttrs)
			}
		}
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("masking %s: %w", p, err)
		}
	}
	for _, p := range subdirs {
		if err := b.maskUnreadable(p, buf); err != nil {
			return err
		}
	}
	return nil
}

// mountTmp mounts a private /tmp, capped in bytes and inodes.
func (b *builder) mountTmp() error {
	if err := b.tmpfsAt("/tmp", fmt.Sprintf("mode=1777,size=%d,nr_inodes=%d", b.cfg.TmpBytes, b.cfg.TmpInodes), unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV); err != nil {
		return fmt.Errorf("mounting /tmp: %w", err)
	}
	return nil
}

// shallowestFirst returns the indexes of mounts ordered by the depth of
// their targets, keeping the given order among equals.
func shallowestFirst(mounts []initproto.Mount) []int {
	order := make([]int, len(mounts))
	for i := range order {
		order[i] = i
	}
	depth := func(i int) int { return strings.Count(filepath.Clean(mounts[i].Target), "/") }
	sort.SliceStable(order, func(i, j int) bool { return depth(order[i]) < depth(order[j]) })
	return order
}

// mountGrants binds each grant source (srcs, in the order of cfg.Mounts)
// on its target, shallowest first so that nested grants land on top.
func (b *builder) mountGrants(srcs []int) error {
	for _, i := range shallowestFirst(b.cfg.Mounts) {
		m := b.cfg.Mounts[i]
		attrs := uint64(unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV)
		mode := "read-write"
		if !m.Writable {
			attrs |= unix.MOUNT_ATTR_RDONLY
			mode = "read-only"
		}
		if err := b.bindAt(srcs[i], m.Target, isDirFD(srcs[i]), attrs); err != nil {
			return fmt.Errorf("mounting %s %s: %w", m.Target, mode, err)
		}
	}
	return nil
}

// mountProxy binds the egress proxy's socket (fd, -1 for none) alone in
// /run/airlock.
func (b *builder) mountProxy(fd int) error {
	if fd < 0 {
		return nil
	}
	var st unix.Stat_t
	err := unix.Fstat(fd, &st)
	if err == nil && st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		err = fmt.Errorf("%s is not a socket", b.cfg.ProxySocket)
	}
	if err == nil {
		err = b.bindAt(fd, initproto.ProxyMount, false, maskAttrs)
	}
	if err != nil {
		return fmt.Errorf("mounting the proxy socket: %w", err)
	}
	return nil
}

// mountProc mounts a new /proc, masks the files that leak the host's
// kernel state and makes the whole of it read-only.
//
// Read-only, and not only its knobs (sys, sysrq-trigger, irq, bus, fs):
// under a root broker the sandbox's uid 0 is host uid 0, the owner of
// every kernel entry in it, whom the kernel lets change their modes, and
// an entry is one object for every /proc (the host's, containers', other
// sandboxes'): a chmod of /proc/meminfo held for every /proc mounted
// after, until a reboot. A process's own files (/proc/self) are written
// through this mount too, which Landlock refuses already; a descriptor
// reopened through /proc/self/fd is written through its own mount.
func (b *builder) mountProc() error {
	procFd, err := b.target("/proc", true, false)
	if err != nil {
		return err
	}
	err = unix.Mount("proc", procFD(procFd), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	unix.Close(procFd)
	if err != nil {
		return refused(initproto.StepProc, fmt.Errorf("mounting /proc: %w", err))
	}
	if err := b.boundUserCounts(); err != nil {
		return err
	}
	masks, err := b.rootOnlyProcFiles()
	if err != nil {
		return fmt.Errorf("listing /proc: %w", err)
	}
	for _, p := range append(masks, "/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug") {
		fd, err := b.walkPath(p)
		if err != nil {
			continue
		}
		err = b.bind(b.devNull, fd, maskAttrs)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("masking %s: %w", p, err)
		}
	}
	proc, err := b.walkPath("/proc")
	if err != nil {
		return err
	}
	defer unix.Close(proc)
	if err := unix.MountSetattr(proc, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		if err := unix.Mount("", procFD(proc), "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("making /proc read-only: %w", err)
		}
	}
	return nil
}

// boundUserCounts writes the sandbox's bounds of /proc/sys/user
// (cfg.UserCounts, or peruser.Counts) through its new /proc, before
// /proc/sys is made read-only. A kernel without one of the knobs has
// nothing of it to count.
func (b *builder) boundUserCounts() error {
	counts := b.cfg.UserCounts
	if len(counts) == 0 {
		for _, c := range peruser.Counts {
			counts = append(counts, initproto.UserCount{Name: c.Name, Max: c.Max})
		}
	}
	for _, c := range counts {
		if c.Name == "" || strings.ContainsRune(c.Name, '/') || c.Max < 0 {
			return fmt.Errorf("bounding %q to %d: not a /proc/sys/user knob and value", c.Name, c.Max)
		}
		fd, err := b.walkPath("/proc/sys/user/" + c.Name)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return fmt.Errorf("bounding %s: %w", c.Name, err)
		}
		err = os.WriteFile(procFD(fd), []byte(strconv.Itoa(c.Max)+"\n"), 0)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("bounding %s: %w", c.Name, err)
		}
	}
	return nil
}

// rootOnlyProcFiles lists the files at the top of the sandbox's new /proc
// that a user other than root may not read (kpageflags, kpagecount,
// kpagecgroup, slabinfo, vmallocinfo, pagetypeinfo, kmsg, ...): they show
// the host kernel's memory and state. Under a root broker the sandbox's
// uid 0 is host uid 0, which the files' modes let in, so each is masked;
// under another broker they are unreadable anyway.
func (b *builder) rootOnlyProcFiles() ([]string, error) {
	pfd, err := b.walkPath("/proc")
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	dfd, err := unix.Openat(pfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	dir := os.NewFile(uintptr(dfd), "/proc")
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if n == "" || n[0] >= '0' && n[0] <= '9' {
			continue // a process
		}
		var st unix.Stat_t
		if unix.Fstatat(pfd, n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		if st.Mode&unix.S_IFMT == unix.S_IFREG && st.Mode&0o004 == 0 {
			out = append(out, "/proc/"+n)
		}
	}
	return out, nil
}

// close releases the descriptors protect needs.
func (b *builder) close() {
	for _, fd := range []*int{&b.empty, &b.devNull, &b.root} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

// bindAt binds src on sandbox path p, creating the mount point.
func (b *builder) bindAt(src int, p string, isDir bool, attrs uint64) error {
	dst, err := b.target(p, isDir, false)
	if err != nil {
		return err
	}
	defer unix.Close(dst)
	return b.bind(src, dst, attrs)
}

func (b *builder) tmpfsAt(p, opts string, attrs uint64) error {
	dst, err := b.target(p, true, false)
	if err != nil {
		return err
	}
	defer unix.Close(dst)
	return b.tmpfs(dst, opts, attrs)
}

func writeAt(dirfd int, name, content string) error {
	fd, err := unix.Openat(dirfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("creating /%s: %w", name, err)
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte(content)); err != nil {
		return fmt.Errorf("writing /%s: %w", name, err)
	}
	return nil
}

func (b *builder) buildDev(devs map[string]int) error {
	if err := b.tmpfsAt("/dev", "mode=0755,size=64k,nr_inodes=64", unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC); err != nil {
		return fmt.Errorf("mounting /dev: %w", err)
	}
	dev, err := b.walkPath("/dev")
	if err != nil {
		return err
	}
	defer unix.Close(dev)
	for _, d := range devNodes {
		// Read-only: the nodes are the host's, owned by host uid 0, which
		// the sandbox's uid 0 is under a root broker, and a read-only
		// mount refuses a chmod of them (mode 0 on the host's /dev/null
		// broke every other user's redirections) while reads and writes
		// of the device go on.
		if err := b.bindAt(devs[d], "/dev/"+d, false, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC); err != nil {
			return fmt.Errorf("binding /dev/%s: %w", d, err)
		}
	}
	for name, to := range map[string]string{
		"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
		"stderr": "/proc/self/fd/2", "core": "/proc/kcore",
	} {
		if err := unix.Symlinkat(to, dev, name); err != nil {
			return fmt.Errorf("linking /dev/%s: %w", name, err)
		}
	}
	if b.cfg.TTY {
		// The pty slave is the init's fd 0; bind it at /dev/pts/0 and
		// /dev/console so ttyname(3) finds it by inode.
		tty, err := ttyPath()
		if err != nil {
			return err
		}
		defer unix.Close(tty)
		for _, p := range []string{"/dev/pts/0", "/dev/console"} {
			if err := b.bindAt(tty, p, false, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC); err != nil {
				return fmt.Errorf("binding the terminal at %s: %w", p, err)
			}
		}
	}
	if err := b.tmpfsAt("/dev/shm", fmt.Sprintf("mode=1777,size=%d,nr_inodes=%d", b.cfg.ShmBytes, b.cfg.TmpInodes), unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC); err != nil {
		return fmt.Errorf("mounting /dev/shm: %w", err)
	}
	if err := unix.MountSetattr(dev, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		if err := unix.Mount("", procFD(dev), "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("making /dev read-only: %w", err)
		}
	}
	return nil
}

// pivot makes the stage the root and detaches the old root. b.root is
// then the new root, still writable (protect may yet create mount points
// in it), and b.devNull the sandbox's own /dev/null: the host's is on the
// detached tree, which no mount may be cloned from.
func (b *builder) pivot() error {
	if err := unix.Fchdir(b.root); err != nil {
		return fmt.Errorf("entering the new root: %w", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the old root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("chdir /: %w", err)
	}
	null, err := b.walkPath("/dev/null")
	if err != nil {
		return fmt.Errorf("opening the sandbox's /dev/null: %w", err)
	}
	unix.Close(b.devNull)
	b.devNull = null
	return nil
}

// seal makes the new root read-only and enters cwd, once protect is done.
func (b *builder) seal(cwd string, mounts []initproto.Mount) error {
	unix.Close(b.root)
	b.root = -1
	if err := unix.Mount("", "/", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("making / read-only: %w", err)
	}
	return enterCwd(cwd, mounts)
}

// enterCwd changes to cwd, which must be a clean absolute path inside a
// grant or /tmp, reached without any symlink (hostile case 5).
func enterCwd(cwd string, mounts []initproto.Mount) error {
	if cwd == "" {
		cwd = "/tmp"
	}
	if !filepath.IsAbs(cwd) || filepath.Clean(cwd) != cwd {
		return fmt.Errorf("working directory %q is not a clean absolute path", cwd)
	}
	if _, inGrant := initproto.Holding(mounts, cwd); !inGrant && !initproto.Within(cwd, "/tmp") {
		return fmt.Errorf("working directory %q is not inside a grant", cwd)
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, cwd, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return fmt.Errorf("opening working directory %q: %w", cwd, err)
	}
	defer unix.Close(fd)
	if err := unix.Fchdir(fd); err != nil {
		return fmt.Errorf("entering working directory %q: %w", cwd, err)
	}
	return nil
}

// ttyPath opens, in this mount namespace, the terminal that is fd 0: the
// fd's own mount belongs to the host's namespace, which open_tree refuses.
func ttyPath() (int, error) {
	name, err := os.Readlink("/proc/self/fd/0")
	if err != nil {
		return -1, fmt.Errorf("finding the terminal: %w", err)
	}
	var want, got unix.Stat_t
	if err := unix.Fstat(0, &want); err != nil {
		return -1, fmt.Errorf("stat of the terminal: %w", err)
	}
	fd, err := unix.Open(name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("opening the terminal %s: %w", name, err)
	}
	if err := unix.Fstat(fd, &got); err != nil || got.Rdev != want.Rdev || want.Mode&unix.S_IFMT != unix.S_IFCHR {
		unix.Close(fd)
		return -1, fmt.Errorf("the terminal %s is not fd 0", name)
	}
	return fd, nil
}

// anyWritable reports whether any of mounts is writable.
func anyWritable(mounts []initproto.Mount) bool {
	for _, m := range mounts {
		if m.Writable {
			return true
		}
	}
	return false
}

// underWritable reports whether the grant holding p is writable.
func underWritable(p string, mounts []initproto.Mount) bool {
	m, ok := initproto.Holding(mounts, p)
	return ok && m.Writable
}
