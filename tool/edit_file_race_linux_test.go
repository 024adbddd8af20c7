package tool

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// TestEditFileKeepsConcurrentWrite: a file another process changes between
// edit_file's read and its write (a background command appending to it, an
// editor saving it in place or by rename) is not replaced by the edit of
// the content read before: the call is refused and the other writer's
// content kept. Before, only a new inode at the name when the edit was
// computed was caught; a write in place, or a rename after that check,
// was silently undone (a lost update of the user's file).
func TestEditFileKeepsConcurrentWrite(t *testing.T) {
	for _, tt := range raceCases() {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorkspace(t)
			p := w.write(t, "f.txt", "alpha beta\n")
			editRacing(t, w.env(), p, tt)
		})
	}
}

// TestEditFileInPlaceKeepsConcurrentWrite: the same for a file written in
// place (a bind mount, as a granted single file is in a sandbox).
func TestEditFileInPlaceKeepsConcurrentWrite(t *testing.T) {
	privateMounts(t)
	for _, tt := range raceCases() {
		if tt.name == "renamed_over" {
			continue // a mount point cannot be renamed over
		}
		dir := tinyTmpfs(t, "64k")
		p := filepath.Join(dir, "f.txt")
		if err := os.WriteFile(p, []byte("alpha beta\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mount(p, p, "", syscall.MS_BIND, ""); err != nil {
			t.Fatalf("bind-mounting f.txt: %v", err)
		}
		t.Logf("case %s", tt.name)
		editRacing(t, Env{Root: dir, Cwd: dir}, p, tt)
		syscall.Unmount(p, syscall.MNT_DETACH)
	}
}

type raceCase struct {
	name  string
	other func(t *testing.T, p string) // the other writer, run just before the edit lands
	want  string                       // the file after the call
	mode  os.FileMode                  // its mode after, when not 0
}

func raceCases() []raceCase {
	return []raceCase{
		{"append", func(t *testing.T, p string) {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString("appended by a background command\n"); err != nil {
				t.Fatal(err)
			}
		}, "alpha beta\nappended by a background command\n", 0},
		{"overwrite_same_size", func(t *testing.T, p string) {
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt([]byte("gamma"), 0); err != nil {
				t.Fatal(err)
			}
		}, "gamma beta\n", 0},
		{"renamed_over", func(t *testing.T, p string) {
			tmp := p + ".saved"
			if err := os.WriteFile(tmp, []byte("saved by an editor\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, p); err != nil {
				t.Fatal(err)
			}
		}, "saved by an editor\n", 0},
		{"chmod_private", func(t *testing.T, p string) {
			if err := os.Chmod(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "alpha beta\n", 0o600},
	}
}

// editRacing runs an edit of p whose write other races, just before the
// edit would land, and checks the other writer's content is kept.
func editRacing(t *testing.T, env Env, p string, tt raceCase) {
	t.Helper()
	ran := false
	old := beforeCommitHook
	beforeCommitHook = func() {
		if !ran {
			ran = true
			tt.other(t, p)
		}
	}
	defer func() { beforeCommitHook = old }()
	before := names(t, filepath.Dir(p))
	out := call(t, env, "edit_file", `{"path":"f.txt","old_string":"beta","new_string":"BETA"}`)
	if !ran {
		t.Fatal("the other writer never ran")
	}
	check{isError: true, contains: []string{"changed while being edited", "the file was left as the other writer made it"}}.verify(t, out)
	if b, _ := os.ReadFile(p); string(b) != tt.want {
		t.Errorf("f.txt holds %q, want the other writer's %q", b, tt.want)
	}
	if fi, err := os.Stat(p); err != nil || tt.mode != 0 && fi.Mode().Perm() != tt.mode {
		t.Errorf("f.txt: %v, %v; want mode %v", fi.Mode(), err, tt.mode)
	}
	if after := names(t, filepath.Dir(p)); !slices.Equal(before, after) {
		t.Errorf("the directory held %q before and %q after", before, after)
	}
}

// TestWriteFileKeepsConcurrentMode: write_file gives a replacement the
// mode and owner the file had when it looked the file up; a chmod 600
// (or a new file at the name) since then is not undone: the call is
// refused and the file left as it is. Before, the 0600 file was replaced
// by one of mode 0644.
func TestWriteFileKeepsConcurrentMode(t *testing.T) {
	for _, tt := range []raceCase{
		{"chmod_private", func(t *testing.T, p string) {
			if err := os.Chmod(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "alpha beta\n", 0o600},
		{"renamed_over_private", func(t *testing.T, p string) {
			tmp := p + ".saved"
			if err := os.WriteFile(tmp, []byte("private\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, p); err != nil {
				t.Fatal(err)
			}
		}, "private\n", 0o600},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorkspace(t)
			p := w.write(t, "f.txt", "alpha beta\n")
			ran := false
			old := beforeCommitHook
			beforeCommitHook = func() {
				if !ran {
					ran = true
					tt.other(t, p)
				}
			}
			defer func() { beforeCommitHook = old }()
			out := call(t, w.env(), "write_file", `{"path":"f.txt","content":"new\n"}`)
			if !ran {
				t.Fatal("the other writer never ran")
			}
			check{isError: true, contains: []string{"changed while being written", "the file was left as the other writer made it"}}.verify(t, out)
			if b, _ := os.ReadFile(p); string(b) != tt.want {
				t.Errorf("f.txt holds %q, want %q", b, tt.want)
			}
			if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != tt.mode {
				t.Errorf("f.txt: %v, %v; want mode %v", fi.Mode(), err, tt.mode)
			}
		})
	}
}
