package linux

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
	"github.com/airlockhq/airlock/internal/testenv"
)

// inodesAt returns the inode of each path, failing the test for a
// missing one.
func inodesAt(t *testing.T, paths []string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, p := range paths {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out[p] = st.Ino
	}
	return out
}

// checkPlaceholders fails the test unless every path of cfg.Placeholders
// is a marked placeholder of its kind, empty, of one name, and share-locked
// (an exclusive lock is refused).
func checkPlaceholders(t *testing.T, cfg *initproto.Config) {
	t.Helper()
	paths := append(slices.Clone(cfg.Masks), cfg.ReadOnly...)
	for _, ph := range cfg.Placeholders {
		f, err := os.Open(ph)
		if err != nil {
			t.Errorf("placeholder %s: %v", ph, err)
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		wantDir := placeholderIsDir(cfg, paths, ph) || !slices.Contains(paths, ph)
		isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		switch {
		case isDir != wantDir:
			t.Errorf("%s: a directory %v, want %v", ph, isDir, wantDir)
		case !marked(f):
			t.Errorf("%s is not marked as a placeholder", ph)
		case isDir && len(readNames(int(f.Fd()), 1)) > 0 && !hasPlaceholderBelow(cfg, ph):
			t.Errorf("%s: a placeholder directory with entries", ph)
		case !isDir && (st.Size != 0 || st.Nlink != 1):
			t.Errorf("%s: size %d, %d links, want an empty file of one name", ph, st.Size, st.Nlink)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err == nil {
			t.Errorf("%s: an exclusive lock was free while it is held", ph)
		}
		f.Close()
	}
}

// hasPlaceholderBelow reports whether another placeholder of cfg lies
// below ph.
func hasPlaceholderBelow(cfg *initproto.Config, ph string) bool {
	return slices.ContainsFunc(cfg.Placeholders, func(o string) bool { return strings.HasPrefix(o, ph+"/") })
}

// depotEntries lists the depot's entries, as "sub/entry".
func depotEntries(t *testing.T, state string) []string {
	t.Helper()
	var out []string
	subs, err := os.ReadDir(filepath.Join(state, DepotDir))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range subs {
		if s.Name() == trashName {
			continue
		}
		for _, e := range names(t, filepath.Join(state, DepotDir, s.Name())) {
			out = append(out, s.Name()+"/"+e)
		}
	}
	return out
}

// TestDepotReusesPlaceholders: with a state directory on the tree's mount,
// the file placeholders a release removes from the tree go into the depot,
// and the next hold moves the same inodes back to the same names, held as
// placeholders are; directory placeholders are made and removed each time,
// as without a depot; the tree holds nothing between the calls.
func TestDepotReusesPlaceholders(t *testing.T) {
	dir, cfg := plainConfig(t)
	state := t.TempDir()
	p := withDepot(t, state)

	held, n, err := p.holdCounting(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n.depot != 0 {
		t.Errorf("%d placeholders from an empty depot", n.depot)
	}
	files := filePlaceholders(cfg)
	if len(cfg.Placeholders) < 30 || files < 20 {
		t.Fatalf("%d placeholders, %d of them files, in a plain directory; want the default grant's ~39 and ~27", len(cfg.Placeholders), files)
	}
	checkPlaceholders(t, cfg)
	first := inodesAt(t, fileOnly(t, cfg.Placeholders))
	p.release(held)
	if got := names(t, dir); len(got) != 0 {
		t.Fatalf("the tree holds %v after the release", got)
	}
	if got := depotEntries(t, state); len(got) != files || slices.ContainsFunc(got, func(e string) bool { return !strings.Contains(e, "/f") }) {
		t.Fatalf("the depot holds %v, want the %d file placeholders and no directory", got, files)
	}

	for round := range 3 {
		held, n, err = p.holdCounting(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if n.depot != files {
			t.Errorf("round %d: %d placeholders from the depot, want all %d files", round, n.depot, files)
		}
		checkPlaceholders(t, cfg)
		if again := inodesAt(t, fileOnly(t, cfg.Placeholders)); !mapsEqual(again, first) {
			t.Errorf("round %d: the file placeholders are not the inodes the first hold made", round)
		}
		if got := depotEntries(t, state); len(got) != 0 {
			t.Errorf("round %d: the depot still holds %v while they are in the tree", round, got)
		}
		p.release(held)
		if got := names(t, dir); len(got) != 0 {
			t.Fatalf("round %d: the tree holds %v after the release", round, got)
		}
	}
}

// withDepot is a set of placeholders (as one process has) with the depot
// below state, closed when the test ends.
func withDepot(t *testing.T, state string) *placeholders {
	p := &placeholders{depot: newDepot(state)}
	t.Cleanup(p.closeDepot)
	return p
}

// fileOnly keeps the paths that are regular files now.
func fileOnly(t *testing.T, paths []string) []string {
	t.Helper()
	var out []string
	for _, p := range paths {
		var st unix.Stat_t
		if unix.Lstat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			out = append(out, p)
		}
	}
	return out
}

func mapsEqual(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestDepotSkipsEntriesThatAreNotPlaceholders: a depot entry that is no
// longer what a placeholder is when made (written to, holding an entry,
// unmarked, with a second name, a symlink, of the other kind, with setuid,
// sticky or group and world write bits) never goes
// into the tree: the hold makes a fresh placeholder instead and removes the
// entry from the depot, following nothing.
func TestDepotSkipsEntriesThatAreNotPlaceholders(t *testing.T) {
	dir, cfg := plainConfig(t)
	state := t.TempDir()
	p := withDepot(t, state)
	held, err := p.hold(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.release(held)
	subs := names(t, filepath.Join(state, DepotDir))
	if len(subs) != 1 {
		t.Fatalf("depot subdirectories %v, want one for the tree", subs)
	}
	sub := filepath.Join(state, DepotDir, subs[0])
	elsewhere := t.TempDir()
	spoil := map[string]func(p string) error{
		"f0..bashrc": func(p string) error { return os.WriteFile(p, []byte("echo pwned\n"), 0o644) },
		"f0..profile": func(p string) error {
			return unix.Removexattr(p, placeholderXattr)
		},
		"f0..envrc": func(p string) error { return os.Link(p, filepath.Join(elsewhere, "second-name")) },
		"f0..npmrc": func(p string) error {
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.Symlink(filepath.Join(elsewhere, "target"), p)
		},
		"f0..mcp.json": func(p string) error {
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.Mkdir(p, 0o755) // a directory where a file was kept
		},
		"f0..zshrc": func(p string) error { return unix.Chmod(p, 0o6755) },
		"f0..kshrc": func(p string) error { return unix.Chmod(p, 0o666) },
		"f0..cshrc": func(p string) error { return unix.Chmod(p, 0o755) },
	}
	spoiled := map[string]bool{}
	for entry, fn := range spoil {
		if err := fn(filepath.Join(sub, entry)); err != nil {
			t.Fatalf("spoiling %s: %v", entry, err)
		}
		spoiled[entry] = true
	}

	held, n, err := p.holdCounting(cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkPlaceholders(t, cfg)
	if want := filePlaceholders(cfg) - len(spoil); n.depot != want {
		t.Errorf("%d placeholders from the depot, want %d (the files but the spoiled)", n.depot, want)
	}
	// (checkPlaceholders found each name a clean placeholder: not the
	// spoiled entry, whose inode number a fresh one may reuse.)
	for entry := range spoiled {
		// Removed from the depot, and nothing followed: the second name
		// is untouched.
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(sub, entry), &st); err == nil {
			t.Errorf("the spoiled depot entry %s is still in the depot", entry)
		}
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "second-name")); err != nil {
		t.Errorf("the spoiled entry's other name: %v", err)
	}
	p.release(held)
	if got := names(t, dir); len(got) != 0 {
		t.Fatalf("the tree holds %v after the release", got)
	}
}

// TestDepotKeepsWhatWasWrittenInTheTree: a placeholder written to while a
// call holds it (a file given content, a file made in a directory) is the
// user's: the release leaves it in the tree, as it is, and puts the rest in
// the depot.
func TestDepotKeepsWhatWasWrittenInTheTree(t *testing.T) {
	dir, cfg := plainConfig(t)
	state := t.TempDir()
	p := withDepot(t, state)
	for round := range 2 { // made, then from the depot
		held, err := p.hold(cfg)
		if err != nil {
			t.Fatal(err)
		}
		rc, vs := filepath.Join(dir, ".envrc"), filepath.Join(dir, ".vscode")
		if !slices.Contains(cfg.Placeholders, rc) || !slices.Contains(cfg.Placeholders, vs) {
			t.Fatalf("no placeholders for %s and %s: %v", rc, vs, cfg.Placeholders)
		}
		if err := os.WriteFile(rc, []byte("export A=1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(vs, "settings.json"), []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		p.release(held)
		if got := names(t, dir); !slices.Equal(got, []string{".envrc", ".vscode"}) {
			t.Fatalf("round %d: the tree holds %v, want the user's .envrc and .vscode", round, got)
		}
		if b, err := os.ReadFile(rc); err != nil || string(b) != "export A=1\n" {
			t.Errorf("round %d: .envrc %q %v", round, b, err)
		}
		if b, err := os.ReadFile(filepath.Join(vs, "settings.json")); err != nil || string(b) != "{}\n" {
			t.Errorf("round %d: .vscode/settings.json %q %v", round, b, err)
		}
		for _, e := range depotEntries(t, state) {
			if strings.HasSuffix(e, "..envrc") || strings.HasSuffix(e, "..vscode") {
				t.Errorf("round %d: the depot took %s", round, e)
			}
		}
		os.RemoveAll(vs)
		os.Remove(rc)
	}
}

// TestDepotKeepsNoDirectory: a directory placeholder is removed at its
// release, never kept: a process whose working directory (or descriptor)
// was in it finds no ".." to climb into the depot from, and no directory
// of the tree is ever in the depot.
func TestDepotKeepsNoDirectory(t *testing.T) {
	dir, cfg := plainConfig(t)
	state := t.TempDir()
	p := withDepot(t, state)
	for round := range 2 {
		held, err := p.hold(cfg)
		if err != nil {
			t.Fatal(err)
		}
		fd, err := unix.Open(filepath.Join(dir, ".vscode"), unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		p.release(held)
		if up, err := unix.Openat(fd, "..", unix.O_RDONLY|unix.O_DIRECTORY, 0); err == nil {
			var st, depotSt unix.Stat_t
			unix.Fstat(up, &st)
			unix.Close(up)
			if unix.Stat(filepath.Join(state, DepotDir), &depotSt) == nil && (st.Ino != depotSt.Ino) {
				// Reaching something is fine as long as it is not the
				// depot or one of its subdirectories.
				for _, sub := range names(t, filepath.Join(state, DepotDir)) {
					var ss unix.Stat_t
					if unix.Stat(filepath.Join(state, DepotDir, sub), &ss) == nil && ss.Ino == st.Ino {
						t.Errorf("round %d: .. of a released placeholder directory is the depot's %s", round, sub)
					}
				}
			} else if err == nil {
				t.Errorf("round %d: .. of a released placeholder directory is the depot", round)
			}
		}
		unix.Close(fd)
		err = filepath.WalkDir(filepath.Join(state, DepotDir), func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() && strings.Count(strings.TrimPrefix(p, filepath.Join(state, DepotDir)), "/") > 1 {
				t.Errorf("round %d: a directory in the depot: %s", round, p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestDepotOnAnotherMount: a tree on another mount than the state
// directory gets placeholders made and removed as without a depot, and
// the depot takes none.
func TestDepotOnAnotherMount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir, cfg := plainConfig(t)
	if err := unix.Mount(testenv.FSSource, dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mounting a tmpfs: %v", err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	state := t.TempDir()
	p := withDepot(t, state)
	for round := range 2 {
		held, n, err := p.holdCounting(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if n.depot != 0 {
			t.Errorf("round %d: %d placeholders from a depot on another mount", round, n.depot)
		}
		checkPlaceholders(t, cfg)
		p.release(held)
		if got := names(t, dir); len(got) != 0 {
			t.Fatalf("round %d: the tree holds %v after the release", round, got)
		}
		if got := depotEntries(t, state); len(got) != 0 {
			t.Fatalf("round %d: the depot holds %v from another mount", round, got)
		}
	}
}

// TestDepotSharedBySets: sets of placeholders of their own (as processes
// are) over one tree and one depot, holding and releasing at once: every
// placeholder a set holds is a clean, locked placeholder while it holds
// it, and at the end the tree is empty and every depot entry is clean.
func TestDepotSharedBySets(t *testing.T) {
	dir, cfg0 := plainConfig(t)
	state := t.TempDir()
	const sets, rounds = 4, 15
	var wg sync.WaitGroup
	for s := range sets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := withDepot(t, state)
			for r := range rounds {
				cfg := copyConfig(cfg0)
				held, err := p.hold(cfg)
				if err != nil {
					t.Errorf("set %d round %d: %v", s, r, err)
					return
				}
				checkPlaceholders(t, cfg)
				p.release(held)
			}
		}()
	}
	wg.Wait()
	if got := names(t, dir); len(got) != 0 {
		t.Fatalf("the tree holds %v after every release", got)
	}
	subs := slices.DeleteFunc(names(t, filepath.Join(state, DepotDir)), func(n string) bool { return n == trashName })
	for _, e := range depotEntries(t, state) {
		sub, entry, _ := strings.Cut(e, "/")
		if !entryClean(t, filepath.Join(state, DepotDir, sub, entry)) {
			t.Errorf("depot entry %s is not a clean placeholder", e)
		}
	}
	if len(subs) != 1 {
		t.Errorf("depot subdirectories %v, want one", subs)
	}
}

// entryClean reports whether the depot entry at p may go into a tree as
// a placeholder.
func entryClean(t *testing.T, p string) bool {
	t.Helper()
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && placeholderClean(fd, &st)
}

// TestDepotBounded: the depot keeps entries for at most depotMaxDirs tree
// directories; a new one past that removes the least recently used, with
// its entries.
func TestDepotBounded(t *testing.T) {
	state := t.TempDir()
	p := withDepot(t, state)
	var first string
	for i := range depotMaxDirs + 3 {
		dir, cfg := plainConfig(t)
		held, err := p.hold(cfg)
		if err != nil {
			t.Fatal(err)
		}
		p.release(held)
		if i == 0 {
			first = names(t, filepath.Join(state, DepotDir))[0]
		}
		if got := names(t, dir); len(got) != 0 {
			t.Fatalf("tree %d holds %v", i, got)
		}
	}
	subs := slices.DeleteFunc(names(t, filepath.Join(state, DepotDir)), func(n string) bool { return n == trashName })
	if len(subs) > depotMaxDirs {
		t.Errorf("%d depot subdirectories, want at most %d", len(subs), depotMaxDirs)
	}
	if slices.Contains(subs, first) {
		t.Errorf("the least recently used subdirectory %s is still there", first)
	}
}

// TestDepotNotOurs: a depot directory another user could write to is
// never used.
func TestDepotNotOurs(t *testing.T) {
	dir, cfg := plainConfig(t)
	state := t.TempDir()
	if err := os.Mkdir(filepath.Join(state, DepotDir), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(state, DepotDir), 0o777); err != nil {
		t.Fatal(err)
	}
	p := withDepot(t, state)
	for range 2 {
		held, n, err := p.holdCounting(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if n.depot != 0 {
			t.Errorf("%d placeholders from a world-writable depot", n.depot)
		}
		p.release(held)
	}
	if got := names(t, dir); len(got) != 0 {
		t.Fatalf("the tree holds %v", got)
	}
	if got := depotEntries(t, state); len(got) != 0 {
		t.Errorf("a world-writable depot was filled: %v", got)
	}
}

// TestDepotTakesOnlyWhatAirlockMade: a marked, empty file found at a
// protected name (a sandbox of another grant could have made and marked it,
// and still hold it open) is held as a placeholder, but its release unlinks
// it: only placeholders an airlock process made go into the depot.
func TestDepotTakesOnlyWhatAirlockMade(t *testing.T) {
	dir, cfg := plainConfig(t)
	state := t.TempDir()
	rc := filepath.Join(dir, ".envrc")
	if err := os.WriteFile(rc, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(rc, placeholderXattr, []byte("1"), 0); err != nil {
		t.Skipf("no user extended attributes here: %v", err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(rc, &st); err != nil {
		t.Fatal(err)
	}
	p := withDepot(t, state)
	held, err := p.hold(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cfg.Placeholders, rc) {
		t.Fatalf("the marked, empty %s is not held as a placeholder: %v", rc, cfg.Placeholders)
	}
	p.release(held)
	if got := names(t, dir); len(got) != 0 {
		t.Fatalf("the tree holds %v after the release", got)
	}
	entries := depotEntries(t, state)
	if slices.ContainsFunc(entries, func(e string) bool { return strings.HasSuffix(e, "..envrc") }) {
		t.Errorf("the depot took the .envrc found in place: %v", entries)
	}
	if want := filePlaceholders(cfg) - 1; len(entries) != want {
		t.Errorf("the depot holds %d entries, want the %d file placeholders made", len(entries), want)
	}
}

// TestDepotCannotBeMade: where the depot cannot be made (the state
// directory is not a directory here), placeholders are made and removed as
// without one, and it is not tried again.
func TestDepotCannotBeMade(t *testing.T) {
	dir, cfg := plainConfig(t)
	state := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(state, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p := withDepot(t, state)
	for round := range 2 {
		held, n, err := p.holdCounting(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if n.depot != 0 {
			t.Errorf("round %d: %d placeholders from a depot that cannot exist", round, n.depot)
		}
		checkPlaceholders(t, cfg)
		p.release(held)
		if got := names(t, dir); len(got) != 0 {
			t.Fatalf("round %d: the tree holds %v after the release", round, got)
		}
	}
	if p.depot.path != "" {
		t.Errorf("the depot at %s is still tried after it could not be made", p.depot.path)
	}
}

// TestDepotExchangedName: a protected name exchanged for something else
// (renameat2 RENAME_EXCHANGE by whoever may write the tree) between the
// release's check and its removal of the name: what the release removed
// or left is not the placeholder held, and the depot takes nothing of it,
// least of all a directory.
func TestDepotExchangedName(t *testing.T) {
	for _, kind := range []string{"a directory", "a file"} {
		t.Run(kind, func(t *testing.T) {
			dir, cfg := plainConfig(t)
			state := t.TempDir()
			p := withDepot(t, state)
			held, err := p.hold(cfg)
			if err != nil {
				t.Fatal(err)
			}
			evil := filepath.Join(dir, "evil")
			if kind == "a directory" {
				err = os.Mkdir(evil, 0o755)
			} else {
				err = os.WriteFile(evil, nil, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := unix.Setxattr(evil, placeholderXattr, []byte("1"), 0); err != nil {
				t.Skipf("no user extended attributes here: %v", err)
			}
			var evilSt unix.Stat_t
			if err := unix.Lstat(evil, &evilSt); err != nil {
				t.Fatal(err)
			}
			beforeDepotMove = func(dirfd int, name string) {
				if name == ".bashrc" {
					if err := unix.Renameat2(dirfd, ".bashrc", dirfd, "evil", unix.RENAME_EXCHANGE); err != nil {
						t.Error(err)
					}
				}
			}
			defer func() { beforeDepotMove = nil }()
			p.release(held)
			err = filepath.WalkDir(filepath.Join(state, DepotDir), func(path string, e fs.DirEntry, err error) error {
				var st unix.Stat_t
				if err == nil && unix.Lstat(path, &st) == nil && st.Ino == evilSt.Ino {
					t.Errorf("the depot took the exchanged %s as %s", kind, path)
				}
				if err == nil && strings.HasSuffix(path, "..bashrc") {
					t.Errorf("the depot kept %s, though the name was exchanged", path)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestDepotNotForAnotherDirectory: depot entries belong to the directory
// they left, not to its inode number: on a journalled ext4 (where a freed
// inode number is given out again at once), a directory made after the
// tree was removed, with the same inode number, gets none of them.
func TestDepotNotForAnotherDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a loop mount needs root")
	}
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		testenv.RequireFeature(t, "mkfs.ext4 (e2fsprogs) for a journalled ext4 to test on")
	}
	img := filepath.Join(t.TempDir(), "fs.img")
	if out, err := exec.Command(mkfs, "-q", "-F", img, "16M").CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v\n%s", err, out)
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		testenv.RequireFeature(t, fmt.Sprintf("a loop mount: %v: %s", err, out))
	}
	defer exec.Command("umount", "-l", mnt).Run()
	tree, other, state := filepath.Join(mnt, "pkg"), filepath.Join(mnt, "other"), filepath.Join(mnt, "state")
	for _, d := range []string{state, tree} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	config := func(dir string) *initproto.Config {
		g, err := grant.FromFlags(dir, grant.Flags{})
		if err != nil {
			t.Fatal(err)
		}
		return &initproto.Config{Mounts: []initproto.Mount{{Source: dir, Target: dir, Writable: true}},
			Masks: g.Masks(), ReadOnly: g.Protected(), ReadOnlyDirs: g.ProtectedDirs()}
	}
	p := withDepot(t, state)
	held, err := p.hold(config(tree))
	if err != nil {
		t.Fatal(err)
	}
	p.release(held)
	before := depotEntries(t, state)
	if len(before) == 0 {
		t.Fatal("the depot took nothing on a journalled ext4")
	}
	var st unix.Stat_t
	if err := unix.Lstat(tree, &st); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(tree); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	var ost unix.Stat_t
	if err := unix.Lstat(other, &ost); err != nil {
		t.Fatal(err)
	}
	if ost.Ino != st.Ino {
		t.Skipf("the new directory got inode %d, not the removed tree's %d: nothing to tell apart", ost.Ino, st.Ino)
	}
	cfg := config(other)
	held, n, err := p.holdCounting(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.release(held)
	if n.depot != 0 {
		t.Errorf("%d placeholders in a new directory came from the depot entries of the removed one with its inode number", n.depot)
	}
	checkPlaceholders(t, cfg)
}

// TestDepotTrashEmptied: what goes to the trash (here an entry a kept
// descriptor filled: a tree deeper than any walk with a descriptor per
// level could take, a symlink to a file outside, and, as root, a directory
// with a file system mounted below it) is emptied in the background
// without following the symlink or entering the mount, and a depot opened
// later by another process empties what an earlier one left.
func TestDepotTrashEmptied(t *testing.T) {
	state := t.TempDir()
	d := newDepot(state)
	defer d.close()
	root := d.open(true)
	if root < 0 {
		t.Fatal("the depot could not be made")
	}
	junk := filepath.Join(state, DepotDir, "junk")
	// 2,000 levels, made by relative steps: the path is longer than
	// PATH_MAX.
	fd, err := unix.Open(filepath.Join(state, DepotDir), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range append([]string{"junk"}, slices.Repeat([]string{"d"}, 2000)...) {
		if err := unix.Mkdirat(fd, c, 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	unix.Close(fd)
	outside := filepath.Join(t.TempDir(), "keep")
	if err := os.WriteFile(outside, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(junk, "link")); err != nil {
		t.Fatal(err)
	}
	mountFD := -1 // the root of the file system mounted below, open
	if os.Geteuid() == 0 {
		mp := filepath.Join(junk, "m", "data")
		if err := os.MkdirAll(mp, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount(testenv.FSSource, mp, "tmpfs", 0, "size=64k"); err != nil {
			t.Fatalf("mounting a tmpfs: %v", err)
		}
		if err := os.WriteFile(filepath.Join(mp, "user-data"), []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
		if mountFD, err = unix.Open(mp, unix.O_RDONLY|unix.O_DIRECTORY, 0); err != nil {
			t.Fatal(err)
		}
		defer func() {
			unix.Unmount(fmt.Sprintf("/proc/self/fd/%d", mountFD), unix.MNT_DETACH)
			unix.Close(mountFD)
		}()
	}
	d.discard(root, "junk")
	if _, err := os.Lstat(junk); err == nil {
		t.Fatal("the entry is still in place after it was discarded")
	}
	waitEmptied := func(d *depot) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); d.emptying.Load(); {
			if time.Now().After(deadline) {
				t.Fatal("the trash is still being emptied after 30 s")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitEmptied(&d)
	if b, err := os.ReadFile(outside); err != nil || string(b) != "keep" {
		t.Errorf("the symlink's target: %q %v", b, err)
	}
	left := names(t, filepath.Join(state, DepotDir, trashName))
	if mountFD >= 0 {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/self/fd/%d/user-data", mountFD)); err != nil || string(b) != "mine" {
			t.Errorf("the file in the mount below the trash: %q %v", b, err)
		}
		if len(left) != 1 {
			t.Errorf("the trash holds %v, want only the directories above the mount point", left)
		}
		if err := unix.Unmount(fmt.Sprintf("/proc/self/fd/%d", mountFD), unix.MNT_DETACH); err != nil {
			t.Fatal(err)
		}
	} else if len(left) != 0 {
		t.Errorf("the trash holds %v after emptying", left)
	}
	// Left for the next process: a depot opened anew empties it.
	if mountFD >= 0 {
		d2 := newDepot(state)
		defer d2.close()
		d2.open(false)
		waitEmptied(&d2)
		if left := names(t, filepath.Join(state, DepotDir, trashName)); len(left) != 0 {
			t.Errorf("the trash holds %v after a later depot emptied it", left)
		}
	}
}

// TestDepotModeOfItsOwn: whatever mode a placeholder was made with (the
// umask) or given in the tree, it waits in the depot as 0644 or 0755, and
// comes back from there.
func TestDepotModeOfItsOwn(t *testing.T) {
	dir, cfg := plainConfig(t)
	state := t.TempDir()
	p := withDepot(t, state)
	old := unix.Umask(0o002)
	held, err := p.hold(cfg)
	unix.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, ".envrc"), 0o4777); err != nil {
		t.Fatal(err)
	}
	p.release(held)
	for _, e := range depotEntries(t, state) {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(state, DepotDir, e), &st); err != nil {
			t.Fatal(err)
		}
		want := uint32(0o644)
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			want = 0o755
		}
		if st.Mode&0o7777 != want {
			t.Errorf("depot entry %s has mode %o, want %o", e, st.Mode&0o7777, want)
		}
	}
	held, n, err := p.holdCounting(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.release(held)
	if want := filePlaceholders(cfg); n.depot != want {
		t.Errorf("%d placeholders came from the depot, want the %d files", n.depot, want)
	}
}

// TestDepotLeavesAnotherNameAlone: a placeholder given another name while
// it was in the tree (a hard link a sandbox of another grant, or the user,
// made) is not the depot's: a release removes its name and leaves the
// inode, and what its other name shows, as they are. Its mode was reset to
// 0644 and its ACLs removed before the depot looked at its links, so the
// other name's 0600 became 0644.
func TestDepotLeavesAnotherNameAlone(t *testing.T) {
	dir, cfg := plainConfig(t)
	p := withDepot(t, t.TempDir())
	held, err := p.hold(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(dir, "mine")
	if err := os.Link(filepath.Join(dir, ".envrc"), mine); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(mine, 0o600); err != nil {
		t.Fatal(err)
	}
	p.release(held)
	fi, err := os.Lstat(mine)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("the other name's mode is %o after the release, want 0600", fi.Mode().Perm())
	}
	if _, err := os.Lstat(filepath.Join(dir, ".envrc")); err == nil {
		t.Errorf("the placeholder's name was left in the tree")
	}
}
