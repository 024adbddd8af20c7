package linux

import (
	"cmp"
	"encoding/hex"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/procid"
	"github.com/airlockhq/airlock/internal/sandbox/linux/eintr"
)

// The placeholder depot. A placeholder's cost is its inode: allocating
// one and freeing it again. On ext4 without a journal the allocator reads
// past every inode freed in the last minutes, so each of the 39
// placeholders of a plain directory took 90–250 µs to make and remove, and
// more the more calls ran before it: a warm claim spent most of its time
// there, a cold exec ~10 ms. Keeping the inode between calls costs neither.
//
// So a file placeholder no call holds any more is not freed but kept in
// the depot, a directory below Options.StateDir (DepotDir, mode 0700), and
// the next hold of the same name in the same directory moves it back
// (renameat2(2), never replacing). Nothing is in the user's tree between
// calls; an inode is allocated only the first time a name is held, and
// freed only when the depot is full or cannot serve.
//
// Directory placeholders are never kept. A process in the tree can hold a
// directory (its working directory, a descriptor: a sandbox of another
// grant under which the name is writable there can), and from a directory
// moved into the depot ".." leads into the depot itself, whatever mounts
// hide the state directory's path, and from there to every other tree's
// entries. A file has no "..". So nothing is ever moved into the depot by
// name: a release links the inode it holds (linkat by descriptor), and no
// directory of anyone's can be made to arrive there in its place.
//
// What the depot holds, and how it is used:
//   - One subdirectory per tree directory placeholders go in, named by its
//     device and its file handle (name_to_handle_at(2): the inode and its
//     generation, so a directory made later that gets the same inode number
//     is another key), and in it at most depotSlots entries per name,
//     "f<slot>.<name>", each an empty file. A placeholder only ever returns
//     to the name and directory it left. Whatever kept a descriptor of it
//     while it was in the tree (a sandbox of another grant under which the
//     name is writable there, a user's process) can write it again when it
//     is back, at the same path, where it could write anyway; a file system
//     without file handles has no depot.
//   - An entry goes into the tree only if it is still what a placeholder is
//     in the depot: a regular file, owned by this user, marked
//     (placeholderXattr), of mode 0644, with no ACL or file capabilities,
//     empty, of one name. Anything else is moved to the depot's trash (a
//     descriptor kept from the tree can still write an entry while it
//     waits there).
//   - Taking an entry is the rename into the tree: of several processes
//     after the same entry one wins and the others get ENOENT. The winner
//     checks that the name is the inode it checked, takes its shared lock
//     and checks again, as for a placeholder found existing
//     (placeholder_linux.go); no lock is taken while an entry is in the
//     depot, so no process ever locks a placeholder it did not take.
//   - Only placeholders an airlock process made go into the depot (made by
//     name, from a spare, or taken from the depot): one found in place, even
//     marked, may be a file a sandbox made and marked itself and still holds
//     open, and is unlinked as before.
//   - Returning one is the release's removal, with the exclusive lock held,
//     the placeholder empty: its mode reset to 0644 and any ACL removed, its
//     inode linked into the depot under a name of the process's own, its
//     name in the tree removed, and the link renamed into a free slot; if
//     the inode then has another link than the depot's, the name removed
//     was not the placeholder (it was exchanged meanwhile) and the depot
//     keeps nothing.
//   - Where the tree is on another mount than the depot (a link cannot
//     cross one), where the file system has no user extended attributes
//     (nothing would be marked), or where a name does not fit a slot name,
//     placeholders are made and removed as before, and spares
//     (spare_linux.go) are made for the claims.
//   - The depot keeps the subdirectories of at most depotMaxDirs tree
//     directories; past that, making a new one moves the least recently
//     used to the trash.
//
// The depot is airlock's own: no sandbox can reach the state directory
// (grant.Guard hides it from every grant, and no directory of a tree ever
// enters the depot), and a kill -9 between a take and a return leaves the
// placeholder in the tree, journalled, as before.

// DepotDir is the depot's directory below Options.StateDir.
const DepotDir = ".placeholder-depot"

// depotSlots is how many entries of one name a depot
// subdirectory keeps: within one process a placeholder is shared by every
// sandbox that needs it, so one is in use at a time; two let a second
// process over the same tree find one too.
const depotSlots = 2

// depotMaxDirs bounds the tree directories the depot keeps entries for.
const depotMaxDirs = 64

// depot is the placeholder depot of one set of placeholders. Its fields
// are guarded by placeholders.mu.
type depot struct {
	path   string // StateDir/DepotDir; empty: no depot
	root   int    // the depot, open, once opened is set
	opened bool
	// subs are the open subdirectories, by the key of the tree directory
	// they serve (depotKey; -1: none exists yet).
	subs map[string]int
	// serves says, for each tree directory asked about, whether the depot
	// can serve it (same mount, user extended attributes).
	serves map[dirID]bool
	// trash is the depot's directory of what is to be removed (trashName),
	// open once opened is set; emptying is set while a goroutine of this
	// process empties it.
	trash       int
	trashOpened bool
	emptying    *atomic.Bool
}

// trashName is the depot's directory of what is to be removed: an entry
// that may not go into a tree, a subdirectory a full depot drops. It is
// moved there in one rename and emptied by a goroutine of its own, so no
// hold or release walks what a descriptor kept from a tree filled an entry
// with (while holding the lock every call of the backend waits for), and
// an emptying that a process's exit cuts short is finished by the next.
const trashName = ".trash"

// newDepot is the depot below stateDir, opened when first used; none
// when stateDir is empty.
func newDepot(stateDir string) depot {
	if stateDir == "" {
		return depot{}
	}
	return depot{path: stateDir + "/" + DepotDir, emptying: new(atomic.Bool)}
}

// slotName is the depot entry of the file placeholder name in slot i.
func slotName(i int, name string) string { return "f" + strconv.Itoa(i) + "." + name }

// open opens the depot, making it when create is set. It returns -1 when
// there is none (or it is not this user's own directory).
func (d *depot) open(create bool) int {
	switch {
	case d.path == "":
		return -1
	case d.opened:
		return d.root
	}
	openRoot := func() (int, error) {
		return eintr.Value(func() (int, error) {
			return unix.Open(d.path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		})
	}
	fd, err := openRoot()
	if errors.Is(err, unix.ENOENT) && create {
		if err = os.MkdirAll(d.path, 0o700); err == nil {
			fd, err = openRoot()
		}
	}
	if err != nil {
		if create {
			d.path = "" // cannot be made or opened here (a read-only state directory, a symlink): not tried again
		}
		return -1
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || int(st.Uid) != os.Geteuid() || st.Mode&0o077 != 0 {
		_ = unix.Close(fd)
		d.path = "" // not ours alone: never used
		return -1
	}
	d.root, d.opened = fd, true
	// What an earlier process left in the trash (its exit cut the
	// emptying short) is emptied now.
	var ts unix.Stat_t
	if unix.Fstatat(fd, trashName, &ts, unix.AT_SYMLINK_NOFOLLOW) == nil && ts.Mode&unix.S_IFMT == unix.S_IFDIR {
		if t := d.trashDir(); t >= 0 && len(readNames(t, 1)) > 0 {
			d.startEmptying()
		}
	}
	return fd
}

// trashDir returns the trash, open, making it; -1 if it cannot be.
func (d *depot) trashDir() int {
	if d.trashOpened {
		return d.trash
	}
	if !d.opened {
		return -1
	}
	open := func() (int, error) {
		return eintr.Value(func() (int, error) {
			return unix.Openat(d.root, trashName, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		})
	}
	fd, err := open()
	if errors.Is(err, unix.ENOENT) {
		if err = unix.Mkdirat(d.root, trashName, 0o700); err == nil || errors.Is(err, unix.EEXIST) {
			fd, err = open()
		}
	}
	if err != nil {
		return -1
	}
	d.trash, d.trashOpened = fd, true
	return fd
}

// trashSeq numbers the names of what this process moves to the trash.
var trashSeq atomic.Uint64

// discard moves name out of the depot directory dirfd into the trash and
// has it emptied in the background. What cannot be moved is left.
func (d *depot) discard(dirfd int, name string) {
	t := d.trashDir()
	if t < 0 {
		return
	}
	to := string(procid.Self()) + "." + strconv.FormatUint(trashSeq.Add(1), 10)
	if renameBetween(false, dirfd, name, t, to, unix.RENAME_NOREPLACE) == nil {
		d.startEmptying()
	}
}

// startEmptying starts a goroutine that empties the trash, unless one of
// this process's is at it.
func (d *depot) startEmptying() {
	if d.emptying == nil || !d.emptying.CompareAndSwap(false, true) {
		return
	}
	fd, err := unix.Openat(d.trash, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		d.emptying.Store(false)
		return
	}
	go func() {
		defer d.emptying.Store(false)
		defer unix.Close(fd)
		budget := maxEmptying
		emptyDir(fd, &budget)
	}()
}

// depotKey names the directory open at fd, on device dev, in the depot:
// its device and file handle, or "" where the file system gives no handle.
func depotKey(fd int, dev uint64) string {
	h, _, err := unix.NameToHandleAt(fd, "", unix.AT_EMPTY_PATH)
	if err != nil || h.Size() == 0 {
		return ""
	}
	return strconv.FormatUint(dev, 16) + "-" + strconv.FormatInt(int64(h.Type()), 16) + "-" + hex.EncodeToString(h.Bytes())
}

// servable reports whether the depot can serve the tree directory pd:
// it has a key and is on the depot's mount.
func (d *depot) servable(pd rawDir, create bool) bool {
	if d.path == "" || pd.id == (dirID{}) || pd.key == "" {
		return false
	}
	if ok, known := d.serves[pd.id]; known {
		return ok
	}
	root := d.open(create)
	if root < 0 {
		return false
	}
	ok := sameMount(root, pd.fd)
	if d.serves == nil {
		d.serves = map[dirID]bool{}
	}
	if len(d.serves) >= 4*depotMaxDirs {
		clear(d.serves)
	}
	d.serves[pd.id] = ok
	return ok
}

// sameMount reports whether the open files a and b are on one mount.
func sameMount(a, b int) bool {
	var sa, sb unix.Statx_t
	if unix.Statx(a, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &sa) != nil ||
		unix.Statx(b, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &sb) != nil ||
		sa.Mask&unix.STATX_MNT_ID == 0 || sb.Mask&unix.STATX_MNT_ID == 0 {
		return false
	}
	return sa.Mnt_id == sb.Mnt_id
}

// sub returns the depot's subdirectory for the tree directory of key,
// open, making it when create is set; -1 when there is none.
func (d *depot) sub(key string, create bool) int {
	if fd, ok := d.subs[key]; ok && (fd >= 0 || !create) {
		return fd
	}
	root := d.open(create)
	if root < 0 {
		return -1
	}
	openSub := func() (int, error) {
		return eintr.Value(func() (int, error) {
			return unix.Openat(root, key, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		})
	}
	fd, err := openSub()
	if errors.Is(err, unix.ENOENT) && create {
		d.clean(root)
		if err = unix.Mkdirat(root, key, 0o700); err == nil || errors.Is(err, unix.EEXIST) {
			fd, err = openSub()
		}
	}
	if err != nil {
		fd = -1
	}
	if d.subs == nil {
		d.subs = map[string]int{}
	}
	if len(d.subs) >= depotMaxDirs {
		d.closeSubs()
		d.subs = map[string]int{}
	}
	d.subs[key] = fd
	return fd
}

// forgetSub drops the open subdirectory of key: it was removed (a full
// depot's cleaning by another process).
func (d *depot) forgetSub(key string) {
	if fd, ok := d.subs[key]; ok {
		if fd >= 0 {
			_ = unix.Close(fd)
		}
		delete(d.subs, key)
	}
}

// closeSubs closes every open subdirectory.
func (d *depot) closeSubs() {
	for key, fd := range d.subs {
		if fd >= 0 {
			_ = unix.Close(fd)
		}
		delete(d.subs, key)
	}
}

// close closes the depot's descriptors.
func (d *depot) close() {
	d.closeSubs()
	if d.trashOpened {
		_ = unix.Close(d.trash)
		d.trashOpened = false
	}
	if d.opened {
		_ = unix.Close(d.root)
		d.opened = false
	}
}

// closeDepot closes the depot's descriptors; a later hold or release
// opens it again.
func (p *placeholders) closeDepot() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.depot.close()
}

// take moves a depot entry into the file placeholder name in the
// directory pd and holds it as a placeholder this process made. It returns
// nil when the depot has none that may go there; exists when name was
// taken already (nothing moved).
func (p *placeholders) take(pd rawDir, name string) (h *heldDir, exists bool) {
	d := &p.depot
	if !d.servable(pd, false) {
		return nil, false
	}
	sub := d.sub(pd.key, false)
	if sub < 0 {
		return nil, false
	}
	for i := range depotSlots {
		slot := slotName(i, name)
		fd, st, ok := d.openEntry(sub, slot)
		if !ok {
			continue
		}
		err := renameBetween(pd.raw, sub, slot, pd.fd, name, unix.RENAME_NOREPLACE)
		switch {
		case errors.Is(err, unix.ENOENT):
			_ = unix.Close(fd)
			continue // another process took it
		case errors.Is(err, unix.EEXIST):
			_ = unix.Close(fd)
			return nil, true
		case err != nil:
			_ = unix.Close(fd)
			if errors.Is(err, unix.EXDEV) {
				d.serves[pd.id] = false
			}
			return nil, false
		}
		// name is now what was at slot when it moved: the entry checked
		// and opened here, unless another process took that one and
		// returned another to the slot meanwhile. Only the one checked is
		// locked (no process ever locks a placeholder it did not take),
		// and held only if name still is it once locked, as for a
		// placeholder found in place (placeholder_linux.go). Whatever else
		// is at name, the caller looks at as found there.
		if !sameAt(pd.fd, name, &st) || sharedLock(fd) != nil || !sameAt(pd.fd, name, &st) {
			_ = unix.Close(fd)
			return nil, true
		}
		return &heldDir{n: 1, fd: fd, created: true, raw: pd.raw}, false
	}
	return nil, false
}

// openEntry opens the depot entry slot of sub when it is there and may go
// into a tree as a placeholder (placeholderClean), and returns it with its
// stat. An entry there that may not is discarded.
func (d *depot) openEntry(sub int, slot string) (int, unix.Stat_t, bool) {
	var st unix.Stat_t
	fd, err := eintr.Value(func() (int, error) {
		return unix.Openat(sub, slot, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	})
	switch {
	case errors.Is(err, unix.ENOENT):
		return -1, st, false
	case err != nil:
		d.discard(sub, slot) // a symlink (ELOOP), or what cannot be opened
		return -1, st, false
	}
	if unix.Fstat(fd, &st) != nil || !placeholderClean(fd, &st) {
		_ = unix.Close(fd)
		d.discard(sub, slot)
		return -1, st, false
	}
	return fd, st, true
}

// sameAt reports whether name in the directory dirfd is the file st
// describes (and not a symlink to it).
func sameAt(dirfd int, name string, st *unix.Stat_t) bool {
	var cur unix.Stat_t
	return unix.Fstatat(dirfd, name, &cur, unix.AT_SYMLINK_NOFOLLOW) == nil && cur.Dev == st.Dev && cur.Ino == st.Ino
}

// placeholderClean reports whether the open file fd, whose stat is st, is
// what a placeholder is when it goes into the depot: marked, with no ACL
// or file capabilities (a descriptor kept from a tree could have set them
// while it waited in the depot), and cleanStat.
func placeholderClean(fd int, st *unix.Stat_t) bool {
	marked, granting := xattrsOf(fd)
	return marked && !granting && cleanStat(st)
}

// cleanStat reports whether st is what a placeholder is in the depot, as
// far as its stat tells: a regular file of this user's, of mode 0644,
// empty, of one name.
func cleanStat(st *unix.Stat_t) bool {
	return int(st.Uid) == os.Geteuid() && st.Mode&unix.S_IFMT == unix.S_IFREG &&
		st.Mode&0o7777 == 0o644 && st.Size == 0 && st.Nlink == 1
}

// grantingXattrs are the extended attributes that grant something: an
// access or default ACL, file capabilities.
var grantingXattrs = []string{"system.posix_acl_access", "system.posix_acl_default", "security.capability"}

// xattrsOf reports whether the open file fd carries the placeholder mark,
// and whether it carries an extended attribute that grants something
// (grantingXattrs). A file whose attributes cannot be listed has neither
// mark nor grant.
func xattrsOf(fd int) (marked, granting bool) {
	var buf [1024]byte
	n, err := unix.Flistxattr(fd, buf[:])
	if err != nil {
		return false, errors.Is(err, unix.ERANGE)
	}
	for name := range strings.SplitSeq(string(buf[:n]), "\x00") {
		switch {
		case name == placeholderXattr:
			marked = true
		case slices.Contains(grantingXattrs, name):
			granting = true
		}
	}
	return marked, granting
}

// toDepot moves the placeholder name of the tree directory pd, which fd
// holds with the exclusive lock and st describes (checked to be that
// name, and empty if a file), into a free slot of the depot. It reports whether the placeholder left the tree; if not, the
// caller removes it as before.
func (p *placeholders) toDepot(pd rawDir, name string, fd int, st *unix.Stat_t) bool {
	d := &p.depot
	if st.Mode&unix.S_IFMT != unix.S_IFREG || !d.servable(pd, true) {
		return false // directories are never kept (see the top of this file)
	}
	// Nothing is changed on an inode with another name than this one, or
	// not this user's: that name (a hard link made while it was in the
	// tree) is someone's file, whose mode and ACLs are theirs. (A link
	// made in the few system calls after this look is found by intoSlot:
	// the depot keeps nothing of it.)
	if unix.Fstat(fd, st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 || int(st.Uid) != os.Geteuid() || st.Size != 0 {
		return false
	}
	// What the placeholder was made with (the umask) or given in the tree
	// meanwhile does not go along: one mode, and no ACL.
	marked, granting := xattrsOf(fd)
	if granting {
		for _, attr := range grantingXattrs {
			_ = unix.Fremovexattr(fd, attr)
		}
		marked, granting = xattrsOf(fd)
	}
	if st.Mode&0o7777 != 0o644 && (unix.Fchmod(fd, 0o644) != nil || unix.Fstat(fd, st) != nil) {
		return false
	}
	if !marked || granting || !cleanStat(st) {
		return false
	}
	for attempt := 0; attempt < 2; attempt++ {
		sub := d.sub(pd.key, true)
		if sub < 0 {
			return false
		}
		switch done, err := p.intoSlot(pd, name, fd, sub); {
		case done:
			return true
		case errors.Is(err, unix.ENOENT) && dirGone(sub):
			// The subdirectory was removed (another process cleaned a
			// full depot): made again once.
			d.forgetSub(pd.key)
		case errors.Is(err, unix.EXDEV):
			d.serves[pd.id] = false
			return false
		default:
			return false
		}
	}
	return false
}

// intoSlot moves the placeholder file name of pd, open at fd, into a free
// slot of the depot subdirectory sub. It does not move name: it links the
// inode fd holds into sub under a name of this process's own (linkat by
// descriptor, which nothing in the tree can change), removes name, checks
// that the inode then has that one link left (name was the placeholder,
// not something exchanged for it meanwhile, which is then what was
// removed, as an unlink would have), and renames the link into a slot.
// It reports whether name is done with; when it is not, the caller removes
// name as before.
func (p *placeholders) intoSlot(pd rawDir, name string, fd, sub int) (bool, error) {
	d := &p.depot
	tmp := "tmp." + string(procid.Self()) + "." + strconv.FormatUint(trashSeq.Add(1), 10)
	way := p.linkWay
	if way == linkNone {
		return false, nil
	}
	dd := rawDir{fd: sub, raw: pd.raw}
	err := dd.linkFD(fd, tmp, way)
	if err != nil && way == linkEmptyPath && (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EPERM)) {
		p.linkWay = linkProc // no CAP_DAC_READ_SEARCH here
		err = dd.linkFD(fd, tmp, linkProc)
	}
	if err != nil {
		return false, err
	}
	if beforeDepotMove != nil {
		beforeDepotMove(pd.fd, name)
	}
	if err := pd.unlinkat(name, 0); err != nil {
		_ = dd.unlinkat(tmp, 0)
		return false, nil
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Nlink != 1 {
		// What was removed was not the placeholder: it is still in the tree
		// under another name, and the depot keeps none of it.
		_ = dd.unlinkat(tmp, 0)
		p.warn("a protected name was exchanged while its placeholder was released", "name", name)
		return true, nil
	}
	for i := range depotSlots {
		err := renameBetween(pd.raw, sub, tmp, sub, slotName(i, name), unix.RENAME_NOREPLACE)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, unix.EEXIST) {
			break
		}
	}
	if dd.unlinkat(tmp, 0) != nil {
		d.discard(sub, tmp) // every slot taken
	}
	return true, nil
}

// warn logs what a release could not put right, when a logger is set.
func (p *placeholders) warn(msg string, args ...any) {
	if p.log != nil {
		p.log.Warn(msg, args...)
	}
}

// beforeDepotMove, when set (by tests), runs just before a release
// removes the placeholder name of the directory dirfd, once its inode is
// linked into the depot.
var beforeDepotMove func(dirfd int, name string)

// clean makes room for one more subdirectory in the depot open at root
// when it keeps depotMaxDirs already: the least recently used (by the
// time an entry last moved in or out) are removed, with their entries.
func (d *depot) clean(root int) {
	var st unix.Stat_t
	if unix.Fstat(root, &st) != nil {
		return
	}
	n := int(st.Nlink) - 2
	if d.trashOpened || unix.Fstatat(root, trashName, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		n-- // the trash is no subdirectory of a tree's
	}
	if n < depotMaxDirs {
		return
	}
	fd, err := unix.Openat(root, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return
	}
	type aged struct {
		name string
		at   int64
	}
	var subs []aged
	for _, e := range ents {
		var s unix.Stat_t
		if e.IsDir() && e.Name() != trashName && unix.Fstatat(root, e.Name(), &s, unix.AT_SYMLINK_NOFOLLOW) == nil {
			subs = append(subs, aged{e.Name(), s.Mtim.Nano()})
		}
	}
	slices.SortFunc(subs, func(a, b aged) int { return cmp.Compare(a.at, b.at) })
	for _, s := range subs[:max(0, len(subs)-depotMaxDirs+1)] {
		d.discard(root, s.name)
	}
	d.closeSubs() // some may be gone
}

// maxEmptying bounds the entries one emptying of the trash looks at: an
// entry a descriptor keeps filling is left for a later one.
const maxEmptying = 1 << 20

// emptyDir removes everything in the directory open at fd, using no more
// than *budget steps. It never follows a symlink, never enters another
// mount (a mount point stays, with the directories above it), and needs
// no more descriptors however deep the tree: a subdirectory's entries are
// moved up into fd, one level at a time, before it is removed.
func emptyDir(fd int, budget *int) {
	for *budget > 0 {
		names := readNames(fd, 256)
		progress := false
		for _, n := range names {
			if *budget--; *budget < 0 {
				return
			}
			err := unix.Unlinkat(fd, n, 0)
			if errors.Is(err, unix.EISDIR) && unix.Unlinkat(fd, n, unix.AT_REMOVEDIR) == nil {
				err = nil
			}
			if err == nil {
				progress = true
			}
			if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.ENOTEMPTY) {
				continue // removed, or gone, or cannot be (a mount point)
			}
			sub, err := unix.Openat2(fd, n, &unix.OpenHow{
				Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
				Resolve: unix.RESOLVE_NO_XDEV | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH,
			})
			if err != nil {
				continue // a mount point, or gone
			}
			for _, c := range readNames(sub, 256) {
				to := "up." + strconv.FormatUint(trashSeq.Add(1), 10) + "." + string(procid.Self())
				if renameBetween(false, sub, c, fd, to, unix.RENAME_NOREPLACE) == nil {
					progress = true
				}
			}
			_ = unix.Close(sub)
		}
		if len(names) == 0 || !progress {
			return
		}
	}
}

// readNames reads up to n names of the directory open at fd, from its
// start, without "." and "..".
func readNames(fd, n int) []string {
	dup, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(dup), "")
	defer f.Close()
	names, _ := f.Readdirnames(n)
	return names
}
