package wasm

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// TestSwapBetweenCheckAndOpen swaps a directory for a symlink to a denied
// (or protected) one at the worst moment, between OpenFile's checks and its
// open, as a concurrent writer in the same tree could: the file opened is
// checked again where it really is.
func TestSwapBetweenCheckAndOpen(t *testing.T) {
	dir := tempDir(t)
	for _, d := range []string{"private", ".git/hooks", "a"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(dir, "private", "key"), "SECRET")
	write(t, filepath.Join(dir, ".git", "hooks", "pre-commit"), "#!/bin/sh\n")
	write(t, filepath.Join(dir, "a", "key"), "fine")
	write(t, filepath.Join(dir, "a", "pre-commit"), "fine")
	g := testGrant(t, dir, "[paths]\nread_write = [\".\"]\ndeny = [\"private\"]\n")
	fs, err := newRootFS(dir, nil, false, g, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.close()
	swapTo := func(target string) {
		beforeOpen = func() {
			os.RemoveAll(filepath.Join(dir, "a"))
			if err := os.Symlink(target, filepath.Join(dir, "a")); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { beforeOpen = nil }()

	swapTo("private")
	if f, e := fs.OpenFile("a/key", experimentalsys.O_RDONLY, 0); e != experimentalsys.ENOENT {
		if f != nil {
			buf := make([]byte, 16)
			n, _ := f.Read(buf)
			t.Errorf("read a denied file through a swapped directory: %q (errno %v)", buf[:n], e)
		} else {
			t.Errorf("errno %v, want ENOENT", e)
		}
	}
	os.Remove(filepath.Join(dir, "a"))
	os.Mkdir(filepath.Join(dir, "a"), 0o755)
	write(t, filepath.Join(dir, "a", "pre-commit"), "fine")
	swapTo(".git/hooks")
	if _, e := fs.OpenFile("a/pre-commit", experimentalsys.O_WRONLY|experimentalsys.O_TRUNC, 0); e != experimentalsys.EACCES {
		t.Errorf("opening a protected file for writing through a swapped directory: errno %v, want EACCES", e)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".git", "hooks", "pre-commit")); string(b) != "#!/bin/sh\n" {
		t.Errorf("the protected file changed: %q", b)
	}
	os.Remove(filepath.Join(dir, "a"))
	os.Mkdir(filepath.Join(dir, "a"), 0o755)
	swapTo(".git/hooks")
	if _, e := fs.OpenFile("a/post-checkout", experimentalsys.O_WRONLY|experimentalsys.O_CREAT, 0o755); e != experimentalsys.EACCES {
		t.Errorf("creating a file in a protected directory through a swapped directory: errno %v, want EACCES", e)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".git", "hooks", "post-checkout")); err == nil {
		t.Error("a file was created in the protected directory")
	}
	// Without a swap, writes where the grant allows work, truncation included.
	beforeOpen = nil
	os.Remove(filepath.Join(dir, "a"))
	os.Mkdir(filepath.Join(dir, "a"), 0o755)
	write(t, filepath.Join(dir, "a", "f"), "old content")
	f, e := fs.OpenFile("a/f", experimentalsys.O_WRONLY|experimentalsys.O_TRUNC, 0)
	if e != 0 {
		t.Fatalf("an allowed write: errno %v", e)
	}
	f.Write([]byte("new"))
	f.Close()
	if b, _ := os.ReadFile(filepath.Join(dir, "a", "f")); string(b) != "new" {
		t.Errorf("after a truncating write: %q", b)
	}
}

// TestAncestorsOfProtectedPathsStay: renaming or removing a directory that
// holds a protected or denied path is refused, or its contents could be
// changed under another name and brought back.
func TestAncestorsOfProtectedPathsStay(t *testing.T) {
	dir := tempDir(t)
	if err := os.MkdirAll(filepath.Join(dir, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	fs, err := newRootFS(dir, nil, false, testGrant(t, dir, "[paths]\nread_write = [\".\"]\n"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.close()
	for _, tc := range []struct {
		name string
		e    experimentalsys.Errno
	}{
		{"rename .git", fs.Rename(".git", "moved")},
		{"rename .git/hooks", fs.Rename(".git/hooks", "moved")},
		{"rename onto .git", fs.Rename("empty", ".git")},
		{"rmdir .git/hooks", fs.Rmdir(".git/hooks")},
	} {
		if tc.e != experimentalsys.EACCES {
			t.Errorf("%s: errno %v, want EACCES", tc.name, tc.e)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "hooks")); err != nil {
		t.Errorf("the protected directory moved: %v", err)
	}
	if e := fs.Rename("empty", "other"); e != 0 {
		t.Errorf("an ordinary rename: errno %v", e)
	}
}

// TestMetadataCallsHoldAgainstASwap: stat, lstat, readlink and utimens
// are judged where the file they reach really is, like opens. A directory
// swapped for a symlink between the check by name and the call made stat
// tell a denied file's size and mode, and utimens change a protected
// file's times (red team).
func TestMetadataCallsHoldAgainstASwap(t *testing.T) {
	dir := tempDir(t)
	for _, d := range []string{"sec", ".git", "a"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(dir, "sec", "key.pem"), "denied content, 31 bytes long!")
	if err := os.Symlink("elsewhere", filepath.Join(dir, "sec", "link")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, ".git", "config"), "[core]\n")
	old := time.Date(2020, 6, 6, 6, 6, 0, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(dir, ".git", "config"), old, old); err != nil {
		t.Fatal(err)
	}
	g := testGrant(t, dir, "[paths]\nread_write = [\".\"]\ndeny = [\"sec\"]\n")
	fs, err := newRootFS(dir, nil, false, g, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.close()
	defer func() { beforeOpen = nil }()
	// reset makes a a real directory holding decoys, and the next call
	// swap it for a symlink to target after its check.
	reset := func(target string) {
		beforeOpen = nil
		os.RemoveAll(filepath.Join(dir, "a"))
		os.Mkdir(filepath.Join(dir, "a"), 0o755)
		write(t, filepath.Join(dir, "a", "key.pem"), "d")
		write(t, filepath.Join(dir, "a", "config"), "d")
		os.Symlink("decoy", filepath.Join(dir, "a", "link"))
		beforeOpen = func() {
			os.RemoveAll(filepath.Join(dir, "a"))
			if err := os.Symlink(target, filepath.Join(dir, "a")); err != nil {
				t.Error(err)
			}
		}
	}
	reset("sec")
	if st, e := fs.Stat("a/key.pem"); e != experimentalsys.ENOENT {
		t.Errorf("stat of a denied file through a swapped directory: size %d, errno %v; want ENOENT", st.Size, e)
	}
	reset("sec")
	if st, e := fs.Lstat("a/key.pem"); e != experimentalsys.ENOENT {
		t.Errorf("lstat of a denied file through a swapped directory: size %d, errno %v; want ENOENT", st.Size, e)
	}
	reset("sec")
	if target, e := fs.Readlink("a/link"); e != experimentalsys.ENOENT {
		t.Errorf("readlink of a denied symlink through a swapped directory: %q, errno %v; want ENOENT", target, e)
	}
	reset(".git")
	now := time.Now().UnixNano()
	if e := fs.Utimens("a/config", now, now); e == 0 {
		t.Error("utimens of a protected file through a swapped directory succeeded")
	}
	if fi, _ := os.Stat(filepath.Join(dir, ".git", "config")); !fi.ModTime().Equal(old) {
		t.Errorf("the protected file's time changed to %v", fi.ModTime())
	}
	// An open file's times are set on that file, never on what its name
	// leads to by then.
	beforeOpen = nil
	os.RemoveAll(filepath.Join(dir, "a"))
	os.Mkdir(filepath.Join(dir, "a"), 0o755)
	write(t, filepath.Join(dir, "a", "config"), "d")
	f, e := fs.OpenFile("a/config", experimentalsys.O_RDWR, 0)
	if e != 0 {
		t.Fatal(e)
	}
	os.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "a-moved"))
	os.Symlink(".git", filepath.Join(dir, "a"))
	if e := f.Utimens(now, now); e != 0 {
		t.Errorf("utimens of an open file that moved: %v", e)
	}
	f.Close()
	if fi, _ := os.Stat(filepath.Join(dir, ".git", "config")); !fi.ModTime().Equal(old) {
		t.Errorf("utimens of an open file changed the protected file its old name leads to: %v", fi.ModTime())
	}
	if fi, _ := os.Stat(filepath.Join(dir, "a-moved", "config")); fi.ModTime().UnixNano() != now {
		t.Errorf("the open file's own time is %v, want now", fi.ModTime())
	}
	// Without a swap they work.
	beforeOpen = nil
	os.Remove(filepath.Join(dir, "a"))
	os.Mkdir(filepath.Join(dir, "a"), 0o755)
	write(t, filepath.Join(dir, "a", "x"), "12345")
	if st, e := fs.Stat("a/x"); e != 0 || st.Size != 5 {
		t.Errorf("stat: %d %v", st.Size, e)
	}
	if e := fs.Utimens("a/x", now, now); e != 0 {
		t.Errorf("utimens: %v", e)
	}
}
