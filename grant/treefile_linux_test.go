package grant

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// whileWatchingFifos runs f and fails t for each time it opens one of the
// fifos for reading, a wait that no writer would ever end: the test sees
// that as its own non-blocking open for writing succeeding, which only a
// waiting reader allows, and closes that end at once, which lets the
// reader go on (to read nothing), so a broken f fails instead of hanging.
func whileWatchingFifos(t *testing.T, fifos []string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	for {
		select {
		case <-done:
			return
		default:
		}
		for _, p := range fifos {
			if fd, err := syscall.Open(p, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0); err == nil {
				syscall.Close(fd)
				t.Errorf("the fifo %s was opened for reading: a broker would wait on it for ever", p)
			}
		}
		time.Sleep(time.Millisecond) // polling for the event, not timing it
	}
}

// TestTreeFifosNotOpened: a file a sandbox left in a tree, where the
// broker reads a configuration or start-up file, may be a fifo; reading
// one blocked every later session's start on the tree. The broker opens
// none of them for reading, and what it protects stays protected: a
// nested repository whose configuration cannot be read is read-only whole,
// an included file that is a fifo is read-only all the same.
func TestTreeFifosNotOpened(t *testing.T) {
	tests := []struct {
		name  string
		spec  []string
		fifos []string
		env   map[string]string // TREE is the tree
		want  []string          // protected, relative to the tree
		rw    []string          // read-write trees, relative to the tree
	}{{
		name:  "a nested repository's config",
		spec:  []string{"sub/.git/HEAD", "sub/.git/objects/", "sub/.git/refs/"},
		fifos: []string{"sub/.git/config"},
		want:  []string{"sub/.git"},
	}, {
		name:  "a repository's commondir",
		spec:  []string{".git/HEAD", ".git/objects/", ".git/refs/"},
		fifos: []string{".git/commondir"},
		want:  []string{".git/commondir", ".git/config", ".git/hooks"},
	}, {
		name:  "a file a repository's config includes",
		spec:  []string{".git/HEAD", ".git/objects/", ".git/refs/", ".git/config = [include]\n\tpath = ../inc.cfg\n"},
		fifos: []string{"inc.cfg"},
		want:  []string{"inc.cfg", ".git/config"},
	}, {
		name:  "Mercurial's hgrc and a file it includes",
		spec:  []string{".hg/store/", ".hg/hgrc-not-shared = %include ../h.rc\n"},
		fifos: []string{".hg/hgrc", "h.rc"},
		want:  []string{".hg/hgrc", "h.rc"},
	}, {
		name:  "the user's git configuration",
		env:   map[string]string{"GIT_CONFIG_GLOBAL": "TREE/global.cfg"},
		fifos: []string{"global.cfg"},
		want:  []string{"global.cfg"},
	}, {
		name:  "a home directory's start-up file and snippets directory",
		spec:  []string{"u/.ssh/", "u/proj/"},
		fifos: []string{"u/.zshrc", "u/.bashrc.d"},
		rw:    []string{"u/proj"}, // u is a home directory: its top is read-only, its directories split off
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Setenv("HOME", "/nonexistent")
			t.Setenv("XDG_CONFIG_HOME", "")
			t.Setenv("GIT_CONFIG_GLOBAL", "")
			t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			for k, v := range tt.env {
				t.Setenv(k, strings.ReplaceAll(v, "TREE", r))
			}
			for _, e := range tt.spec {
				name, content, isFile := strings.Cut(e, " = ")
				if !isFile {
					mkTree(t, r, e)
					continue
				}
				if err := os.MkdirAll(filepath.Dir(filepath.Join(r, name)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(r, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var fifos []string
			for _, f := range tt.fifos {
				p := filepath.Join(r, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := syscall.Mkfifo(p, 0o644); err != nil {
					t.Fatal(err)
				}
				fifos = append(fifos, p)
			}
			var g *Grant
			whileWatchingFifos(t, fifos, func() { g, err = FromFlags(r, Flags{}) })
			if err != nil {
				t.Fatal(err)
			}
			got := g.Protected()
			for _, w := range tt.want {
				if !slices.Contains(got, filepath.Join(r, w)) {
					t.Errorf("want %s protected, have %q", w, got)
				}
			}
			for _, w := range tt.rw {
				if !slices.Contains(g.WritableTrees(), filepath.Join(r, w)) {
					t.Errorf("want %s a read-write tree, have %q", w, g.WritableTrees())
				}
			}
		})
	}
}

// TestTreeFileKinds: openTreeFile opens a regular file, through a symlink
// only where asked to, and nothing else.
func TestTreeFileKinds(t *testing.T) {
	r, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mkTree(t, r, "file", "dir/", "link -> file")
	if err := syscall.Mkfifo(filepath.Join(r, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		follow bool
		ok     bool
	}{
		{"file", false, true}, {"link", true, true}, {"link", false, false},
		{"fifo", true, false}, {"dir", true, false}, {"missing", true, false},
	} {
		f, err := openTreeFile(filepath.Join(r, tt.name), tt.follow)
		if (err == nil) != tt.ok {
			t.Errorf("openTreeFile(%s, follow %v): %v, want ok %v", tt.name, tt.follow, err, tt.ok)
		}
		if err == nil {
			f.Close()
		}
	}
	b, whole, err := readTreeFile(filepath.Join(r, "file"), false, 4)
	if err != nil || string(b) != "ref:" || whole {
		t.Errorf("readTreeFile(file, 4) = %q, whole %v, %v; want the first 4 bytes, not whole", b, whole, err)
	}
}
