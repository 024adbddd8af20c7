package tool

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockhq/airlock/internal/testenv"
)

// privateMounts moves the calling goroutine's thread into a mount namespace
// of its own, so the mounts a test makes are seen by nothing else on the
// host and vanish with the thread. The thread stays locked to the test's
// goroutine and exits with it: everything that must see the mounts (the
// tool call and the checks) runs on this goroutine, and no t.Run subtests.
func privateMounts(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.RequireFeature(t, "mounting a tmpfs needs root")
	}
	runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
	if err := syscall.Unshare(syscall.CLONE_NEWNS); err != nil {
		testenv.RequireFeature(t, "unshare(CLONE_NEWNS): "+err.Error())
	}
	if err := syscall.Mount("none", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		t.Fatalf("making mounts private: %v", err)
	}
}

// tinyTmpfs mounts a tmpfs of size bytes at a new directory and returns it.
// Call privateMounts first.
func tinyTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0755"); err != nil {
		t.Fatalf("mounting a tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fill writes to dir/filler until the file system is full.
func fill(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling: %v", err)
			}
			return
		}
	}
}

// names lists dir.
func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// TestWriteFullDisk: on a full file system, write_file and edit_file fail
// without touching the old file, say so without blaming the path, and leave
// no temporary file (issue 11.1). Before, write_file truncated f.txt to 0
// bytes and edit_file could leave a mix of old and new.
func TestWriteFullDisk(t *testing.T) {
	privateMounts(t)
	dir := tinyTmpfs(t, "64k")
	f := filepath.Join(dir, "f.txt")
	old := "first\n" + strings.Repeat("old line\n", 400) // 3,606 bytes: one page
	if err := os.WriteFile(f, []byte(old), 0o640); err != nil {
		t.Fatal(err)
	}
	fill(t, dir)
	env := Env{Root: dir, Cwd: dir}
	big := strings.Repeat("n", 16<<10)
	for _, c := range []struct{ tool, args, want string }{
		{"write_file", `{"path":"f.txt","content":"` + big + `"}`, "write_file could not write " + f + ": no space left on device; the file was left unchanged"},
		{"write_file", `{"path":"f.txt","content":"tiny"}`, "the file was left unchanged"},
		{"edit_file", `{"path":"f.txt","old_string":"first","new_string":"` + big + `"}`, "edit_file could not write " + f + ": no space left on device; the file was left unchanged"},
		{"edit_file", `{"path":"f.txt","old_string":"old","new_string":"new","replace_all":true}`, "the file was left unchanged"},
		{"write_file", `{"path":"new.txt","content":"` + big + `"}`, "write_file could not write " + filepath.Join(dir, "new.txt") + ": no space left on device; no file was created"},
	} {
		out := call(t, env, c.tool, c.args)
		if !out.IsError || !strings.Contains(out.Content, c.want) || strings.Contains(out.Content, `field "path"`) {
			t.Errorf("%s: %q, want an error containing %q and not blaming field \"path\"", c.tool, out.Content, c.want)
		}
		if b, err := os.ReadFile(f); err != nil || string(b) != old {
			t.Fatalf("after %s f.txt holds %d bytes (%v), want the old %d", c.tool, len(b), err, len(old))
		}
		if got := names(t, dir); !slices.Equal(got, []string{"f.txt", "filler"}) {
			t.Errorf("after %s the directory holds %q, want only f.txt and filler", c.tool, got)
		}
	}
	if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("f.txt mode = %v (%v), want 0640", fi.Mode(), err)
	}
}

// TestWriteInPlaceFallback: a file rename cannot replace (a bind mount, as a
// granted single file is inside a sandbox), or in a directory where no new
// file can be made, is still written, in place; on a full disk that fails
// before any byte changes.
func TestWriteInPlaceFallback(t *testing.T) {
	privateMounts(t)
	dir := tinyTmpfs(t, "64k")
	f := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(f, []byte("old content\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(f, f, "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind-mounting f.txt: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(f, syscall.MNT_DETACH) })
	env := Env{Root: dir, Cwd: dir}
	before, _ := os.Stat(f)

	check{contains: []string{"wrote 4 bytes"}}.verify(t, call(t, env, "write_file", `{"path":"f.txt","content":"new\n"}`))
	check{contains: []string{"made 1 replacement"}}.verify(t, call(t, env, "edit_file", `{"path":"f.txt","old_string":"new","new_string":"newer"}`))
	if b, _ := os.ReadFile(f); string(b) != "newer\n" {
		t.Errorf("bind-mounted f.txt holds %q, want %q", b, "newer\n")
	}
	if after, _ := os.Stat(f); !os.SameFile(before, after) {
		t.Error("bind-mounted f.txt is a new file; want it written in place")
	}

	// The directory read-only, the file still writable (its own mount).
	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
		t.Fatalf("remounting the directory read-only: %v", err)
	}
	check{contains: []string{"wrote 6 bytes"}}.verify(t, call(t, env, "write_file", `{"path":"f.txt","content":"third\n"}`))
	if b, _ := os.ReadFile(f); string(b) != "third\n" {
		t.Errorf("f.txt in a read-only directory holds %q, want %q", b, "third\n")
	}
	out := call(t, env, "write_file", `{"path":"g.txt","content":"x"}`)
	check{isError: true, contains: []string{"could not write " + filepath.Join(dir, "g.txt") + ": read-only file system; no file was created"}}.verify(t, out)

	// Full: the space is reserved before any byte is written.
	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_BIND, ""); err != nil {
		t.Fatalf("remounting the directory read-write: %v", err)
	}
	fill(t, dir)
	out = call(t, env, "write_file", `{"path":"f.txt","content":"`+strings.Repeat("z", 16<<10)+`"}`)
	check{isError: true, contains: []string{"could not write " + f + ": no space left on device; the file was left unchanged"}}.verify(t, out)
	if b, _ := os.ReadFile(f); string(b) != "third\n" {
		t.Errorf("after a full-disk write f.txt holds %d bytes, want %q", len(b), "third\n")
	}
	if got := names(t, dir); !slices.Equal(got, []string{"f.txt", "filler"}) {
		t.Errorf("the directory holds %q, want only f.txt and filler", got)
	}
}
