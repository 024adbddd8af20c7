package inside

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/sandbox/linux/eintr"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
	"github.com/airlockhq/airlock/wire"
)

// emptyName is an empty read-only file on the stage, the source of the
// mounts that cover symlinks and special files at protected paths. It is
// unlinked once every mount is made; the mounts keep it.
const emptyName = ".airlock-empty"

// PlaceholderXattr marks a placeholder airlock made on the host
// (wire.PlaceholderXattr).
const PlaceholderXattr = wire.PlaceholderXattr

// PlaceholderList is where the sandbox finds the paths that are airlock's
// placeholders rather than the user's files (see wire.PlaceholderList).
const PlaceholderList = wire.PlaceholderList

const (
	roAttrs   = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
	maskAttrs = roAttrs | unix.MOUNT_ATTR_NOEXEC
)

func (b *builder) makeEmpty() error {
	f, err := unix.Openat(b.root, emptyName, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o444)
	if err != nil {
		return fmt.Errorf("creating the empty file: %w", err)
	}
	unix.Close(f)
	b.empty, err = openBeneath(b.root, emptyName, unix.O_PATH)
	if err != nil {
		return fmt.Errorf("opening the empty file: %w", err)
	}
	return nil
}

// protect hides the denied paths, makes the protected ones read-only and
// pins every ancestor of them (and of nested grants) that lies in a
// writable grant, so that none can be renamed, removed or replaced: the
// kernel refuses to move or remove a mount point (EBUSY). Without the pins,
// `mv a a2` would carry the mount over a/secret along to a2/secret and
// leave a/secret unprotected.
func (b *builder) protect() error {
	// Every mount read-only (a tool that changes nothing): nothing in the
	// sandbox can write a protected path or a name that leads to it, so
	// none is mounted over, and the placeholders other calls hold in the
	// tree, which come and go meanwhile, are listed (before any mask
	// covers one) for the tools to skip. A warm sandbox lists them when
	// claimed (listMarkedLocked): here only the denied paths whose mask
	// covers a placeholder, since the mask hides its mark from then on.
	readOnly := !anyWritable(b.cfg.Mounts)
	b.readOnly = readOnly
	if readOnly && b.cfg.Claim {
		b.maskedMarked = b.marked(placeholderPaths(b.cfg.Mounts, b.cfg.Masks, false))
	} else if readOnly {
		b.cfg.Placeholders = append(b.cfg.Placeholders, b.marked(b.candidatePaths())...)
	}
	for _, p := range b.cfg.Masks {
		if err := b.hold(p, true); err != nil {
			return fmt.Errorf("hiding denied path %s: %w", p, err)
		}
	}
	if readOnly && !b.cfg.Claim {
		// A placeholder made between the listing above and its mask.
		for _, p := range b.maskedMarked {
			if !slices.Contains(b.cfg.Placeholders, p) {
				b.cfg.Placeholders = append(b.cfg.Placeholders, p)
			}
		}
	}
	protected := b.cfg.ReadOnly
	if readOnly {
		protected = nil
	}
	for _, p := range protected {
		if err := b.hold(p, false); err != nil {
			return fmt.Errorf("making protected path %s read-only: %w", p, err)
		}
	}
	if err := b.pinAncestors(); err != nil {
		return err
	}
	if err := b.listPlaceholders(); err != nil {
		return err
	}
	if err := unix.Unlinkat(b.root, emptyName, 0); err != nil {
		return fmt.Errorf("removing the empty file: %w", err)
	}
	return nil
}

// hold mounts over one denied (mask) or protected path. A path that does
// not exist is created first as an empty placeholder, a directory or a
// file by its kind (the host has normally made it already), so the sandbox
// cannot create it. A symlink at the path, or at one of its ancestors, is
// covered by an empty read-only file: nothing in the sandbox follows it or
// replaces it, and the rest of the tree stays usable. A regular file with
// more than one hard link is refused: its other names would stay open.
func (b *builder) hold(p string, mask bool) error {
	fd, at, err := b.openNoFollow(p)
	switch {
	case errors.Is(err, unix.ENOENT):
		if !underWritable(p, b.cfg.Mounts) {
			return nil // nothing in the sandbox can create it
		}
		dir := !mask && slices.Contains(b.cfg.ReadOnlyDirs, p)
		if fd, err = b.target(p, dir, true); err != nil {
			return err
		}
		at = p
	case errors.Is(err, unix.ENOTDIR):
		return nil // a file stands where a directory would: nothing can exist below
	case err != nil:
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	if mask && b.readOnly && at == p && !slices.Contains(b.maskedMarked, p) && isMarked(fd, &st) {
		// The mask will hide the mark: read it now, from what is masked,
		// for a placeholder another call made since the listing
		// (maskedMarked), which the tools must not show.
		b.maskedMarked = append(b.maskedMarked, p)
	}
	switch kind := st.Mode & unix.S_IFMT; {
	case kind == unix.S_IFLNK:
		err = b.bind(b.empty, fd, maskAttrs)
	case kind == unix.S_IFDIR && mask:
		err = b.tmpfs(fd, "mode=0555,size=4k,nr_inodes=1", maskAttrs)
	case kind == unix.S_IFDIR:
		err = b.bind(fd, fd, roAttrs)
	case kind == unix.S_IFREG && st.Nlink > 1:
		return fmt.Errorf("the file has %d hard links, and its other names would stay open to the sandbox; remove the extra links", st.Nlink)
	case kind == unix.S_IFREG && !mask:
		err = b.bind(fd, fd, roAttrs)
	case mask:
		err = b.bind(b.devNull, fd, maskAttrs)
	default: // a socket, fifo or device at a protected name: cover it
		err = b.bind(b.empty, fd, maskAttrs)
	}
	if errors.Is(err, unix.ENOENT) && !underWritable(p, b.cfg.Mounts) {
		// Gone since it was opened (another call's placeholder, released)
		// in a mount the sandbox cannot write: as if it had been missing.
		return nil
	}
	if err != nil {
		return err
	}
	b.mounted = append(b.mounted, at)
	return nil
}

// openNoFollow is walkNoFollow in one openat2 when no component of p but
// the last is a symlink (the common case: the 39 placeholders of a plain
// directory each took a walk, one openat2 and fstat per component): a
// symlink on the way (ELOOP) or a kernel without openat2 (whose fallback
// in openBeneath would follow one) takes the walk.
func (b *builder) openNoFollow(p string) (int, string, error) {
	fd, err := eintr.Openat2(b.root, rel(p), &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_BENEATH,
	})
	switch {
	case err == nil:
		// With O_PATH|O_NOFOLLOW a symlink as the last component is
		// opened itself, as walkNoFollow does.
		return fd, p, nil
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		// A component is missing, or a non-directory stands above p,
		// before any symlink: what walkNoFollow would find too.
		return -1, "", err
	}
	return b.walkNoFollow(p)
}

// walkNoFollow opens sandbox path p below the stage without following any
// symlink. It returns an O_PATH fd of p, or of the first component that is
// a symlink (and that component's path), or ENOENT when a component is
// missing, or ENOTDIR when a non-directory stands above p.
func (b *builder) walkNoFollow(p string) (int, string, error) {
	cur, err := unix.Dup(b.root)
	if err != nil {
		return -1, "", err
	}
	parts := strings.Split(rel(p), "/")
	sofar := ""
	for i, c := range parts {
		sofar += "/" + c
		next, err := openBeneath(cur, c, unix.O_PATH)
		unix.Close(cur)
		if err != nil {
			return -1, "", err
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil {
			unix.Close(next)
			return -1, "", err
		}
		kind := st.Mode & unix.S_IFMT
		if kind == unix.S_IFLNK {
			return next, sofar, nil
		}
		if i < len(parts)-1 && kind != unix.S_IFDIR {
			unix.Close(next)
			return -1, "", unix.ENOTDIR
		}
		cur = next
	}
	return cur, p, nil
}

// pinAncestors makes every directory between a writable grant's root and a
// path mounted over inside it (a mask, a protected path, a nested grant) a
// mount point of its own, shallowest first, each a recursive bind of
// itself that keeps what is mounted below it.
func (b *builder) pinAncestors() error {
	targets := map[string]bool{}
	for _, m := range b.cfg.Mounts {
		targets[m.Target] = true
	}
	paths := slices.Clone(b.mounted)
	for _, m := range b.cfg.Mounts {
		paths = append(paths, m.Target)
	}
	pins := map[string]bool{}
	for _, p := range paths {
		for a := filepath.Dir(p); a != "/" && !targets[a] && !pins[a]; a = filepath.Dir(a) {
			m, ok := initproto.Holding(b.cfg.Mounts, a)
			if !ok || !m.Writable {
				break
			}
			pins[a] = true
		}
	}
	order := make([]string, 0, len(pins))
	for a := range pins {
		order = append(order, a)
	}
	// Shallowest first: each pin is then made inside the pins above it
	// and clones only the masks, protected paths and grants below it, once
	// per ancestor. Deepest first, each pin cloned every pin below it
	// along with what they had cloned, so the mounts doubled per level
	// and a protected path some 17 directories deep (which a shell can
	// make) passed the kernel's mount limit (ENOSPC) for every call.
	slices.SortFunc(order, func(x, y string) int {
		if d := strings.Count(x, "/") - strings.Count(y, "/"); d != 0 {
			return d
		}
		return strings.Compare(x, y)
	})
	// A pin that airlock made (a placeholder the host made as the parent
	// of a protected or denied path, or a directory this init made for
	// one) is the parent of nothing of the user's: it is made read-only
	// itself, the mounts below it keeping their own attributes, so the
	// sandbox cannot fill it (a .git the scan took for a repository but the
	// hold found gone and made again, with a HEAD and objects planted in it).
	made := map[string]bool{}
	for _, p := range append(slices.Clone(b.cfg.Placeholders), b.created...) {
		made[p] = true
	}
	for _, a := range order {
		fd, err := b.walkPath(a)
		if err != nil {
			return fmt.Errorf("pinning %s: %w", a, err)
		}
		err = b.bind(fd, fd, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
		unix.Close(fd)
		if err == nil && made[a] {
			err = b.readOnlyTop(a)
		}
		if err != nil {
			return fmt.Errorf("pinning %s: %w", a, err)
		}
	}
	return nil
}

// readOnlyTop makes the mount at sandbox path p read-only, and only that
// mount: those below it keep their attributes.
func (b *builder) readOnlyTop(p string) error {
	fd, err := b.walkPath(p)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if b.newAPI {
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
			return fmt.Errorf("mount_setattr: %w", err)
		}
		return nil
	}
	if err := unix.Mount("", procFD(fd), "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("remounting read-only: %w", err)
	}
	return nil
}

// listPlaceholders writes PlaceholderList when the host made placeholders.
func (b *builder) listPlaceholders() error {
	if len(b.cfg.Placeholders) == 0 {
		return nil
	}
	dir, err := b.walk(rel(filepath.Dir(PlaceholderList)), true, false)
	if err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(PlaceholderList), err)
	}
	defer unix.Close(dir)
	if err := writeAt(dir, filepath.Base(PlaceholderList), strings.Join(b.cfg.Placeholders, "\n")+"\n"); err != nil {
		return err
	}
	var excl strings.Builder
	for _, p := range b.cfg.Placeholders {
		if m, ok := initproto.Holding(b.cfg.Mounts, p); ok && m.Writable && p != m.Target {
			excl.WriteString(gitPattern(m.Rel(p)) + "\n")
		}
	}
	return writeAt(dir, filepath.Base(wire.PlaceholderExcludes), excl.String())
}

// marked returns those of paths (placeholderPaths of a grant's paths) that
// are airlock's placeholders (they carry grant.PlaceholderXattr), for a
// sandbox whose every mount is read-only (a tool that changes nothing).
// Such a sandbox holds no placeholder of its own, but calls running beside
// it do, in the same tree: its tools must take theirs for missing, as they
// do their own.
func (b *builder) marked(paths []string) []string {
	var out []string
	// Most names are missing (a plain directory has none of them): one
	// read of the directory they would be in says so, where opening
	// each would take a system call apiece; and a directory missing from
	// its parent's listing is not opened at all.
	dirs := map[string]map[string]bool{}
	var buf []byte
	names := func(dir string) map[string]bool {
		if got, listed := dirs[dir]; listed {
			return got
		}
		var got map[string]bool
		if up := filepath.Dir(dir); up != dir {
			if in, listed := dirs[up]; listed && in != nil && !in[filepath.Base(dir)] {
				got = map[string]bool{}
			}
		}
		if got == nil {
			if buf == nil {
				buf = make([]byte, 16<<10)
			}
			got = b.dirNames(dir, buf)
		}
		dirs[dir] = got
		return got
	}
	// The shallowest directories first, so that each parent is listed
	// before its children are looked for in it.
	parents := make([]string, 0, len(paths))
	for _, q := range paths {
		parents = append(parents, filepath.Dir(q))
	}
	slices.SortFunc(parents, func(x, y string) int {
		return cmp.Compare(strings.Count(x, "/"), strings.Count(y, "/"))
	})
	for _, dir := range parents {
		names(dir)
	}
	for _, q := range paths {
		if got := names(filepath.Dir(q)); got != nil && !got[filepath.Base(q)] {
			continue
		}
		fd, at, err := b.openNoFollow(q)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if at == q && unix.Fstat(fd, &st) == nil && isMarked(fd, &st) {
			out = append(out, q)
		}
		unix.Close(fd)
	}
	return out
}

// isMarked reports whether the open file fd, of stat st, is a placeholder
// (a regular file or directory carrying PlaceholderXattr).
func isMarked(fd int, st *unix.Stat_t) bool {
	if kind := st.Mode & unix.S_IFMT; kind != unix.S_IFDIR && kind != unix.S_IFREG {
		return false
	}
	var mark [8]byte
	_, err := unix.Getxattr(procFD(fd), PlaceholderXattr, mark[:])
	return err == nil || errors.Is(err, unix.ERANGE)
}

// dirNames returns the names in sandbox directory dir, an empty set when
// it is missing, or nil when it cannot be read whole cheaply (then each
// name is looked up on its own). buf is its getdents buffer.
func (b *builder) dirNames(dir string, buf []byte) map[string]bool {
	name := rel(dir)
	if name == "" {
		name = "."
	}
	fd, err := openBeneath(b.root, name, unix.O_RDONLY|unix.O_DIRECTORY)
	if errors.Is(err, unix.ENOENT) {
		return map[string]bool{}
	}
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	names := map[string]bool{}
	for range 4 {
		n, err := eintr.Value(func() (int, error) { return unix.Getdents(fd, buf) })
		if err != nil {
			return nil
		}
		if n == 0 {
			return names
		}
		_, _, ents := unix.ParseDirent(buf[:n], -1, nil)
		for _, e := range ents {
			names[e] = true
		}
	}
	return nil // a large directory: looked up name by name
}

// listMarkedLocked lists, in a read-only warm sandbox just claimed (locked
// down since it was built), the placeholders calls beside it hold now: the
// protected paths and the directories above them and the denied paths,
// which are marked (marked), and the denied paths whose mask covered a
// placeholder when the sandbox was built. A masked path whose placeholder
// has gone since is missing in the sandbox too (the host's removal took
// the mask with it, or moved it along), and one where a file of the
// user's stands now never gets this far: the host checks a warm
// sandbox's grant paths before it claims one (samePaths). What it needs
// besides the claim is ready before it: the paths to look at
// (candidatePaths) and the root it lists from, b.root (openRoot).
func (b *builder) listMarkedLocked() error {
	if b.root < 0 {
		return errors.New("listing placeholders: the root is not open")
	}
	list := b.marked(b.candidatePaths())
	for _, p := range b.maskedMarked {
		if !slices.Contains(list, p) {
			list = append(list, p)
		}
	}
	b.cfg.Placeholders = list
	return nil
}

// candidatePaths returns placeholderCandidates(b.cfg), worked out once.
func (b *builder) candidatePaths() []string {
	if b.candidates == nil {
		b.candidates = placeholderCandidates(b.cfg)
	}
	return b.candidates
}

// openRoot opens the sandbox's root as b.root, for listMarkedLocked; the
// returned func closes it.
func (b *builder) openRoot() (closeRoot func(), err error) {
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the root to list placeholders: %w", err)
	}
	b.root = root
	return func() {
		unix.Close(root)
		b.root = -1
	}, nil
}

// gitPattern is a git exclude pattern that matches the path rel (relative
// to a tree's root, which is a repository's root when git runs there) and
// nothing else: anchored, with the characters patterns give a meaning to
// escaped.
func gitPattern(rel string) string {
	var b strings.Builder
	b.WriteByte('/')
	for _, r := range rel {
		if strings.ContainsRune(`\*?[]!# `, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
