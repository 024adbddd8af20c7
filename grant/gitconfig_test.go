package grant

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitIncludeWalkBounded: a sandbox can leave a configuration that
// includes itself, or many files, in a tree; each later session's start
// reads it. A walk reads each file once, at most maxWalkFiles of them and
// maxConfigFile bytes of each, and a bound it meets leaves the tree's scan
// incomplete (its risk is reported) rather than silently short.
func TestGitIncludeWalkBounded(t *testing.T) {
	t.Setenv("HOME", "/nonexistent")
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("GIT_CONFIG_GLOBAL", "")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	many := ""
	for i := range maxWalkFiles + 44 {
		many += fmt.Sprintf("[include]\n\tpath = ../inc/%d.cfg\n", i)
	}
	tests := []struct {
		name     string
		config   string
		complete bool
	}{
		{"a config that includes itself three times", strings.Repeat("[include]\n\tpath = config\n", 3), true},
		{"more included files than a walk reads", many, false},
		{"a config larger than is read", "[core]\n\teditor = vi\n" + strings.Repeat("#", maxConfigFile) + "\n[core]\n\thooksPath = hidden\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			mkTree(t, r, ".git/HEAD", ".git/objects/", ".git/refs/", "inc/")
			for i := range maxWalkFiles + 44 {
				if err := os.WriteFile(filepath.Join(r, "inc", fmt.Sprintf("%d.cfg", i)), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(r, ".git", "config"), []byte(tt.config), 0o644); err != nil {
				t.Fatal(err)
			}
			list, complete := protectedPaths(r, nil, []string{r}, nil)
			if complete != tt.complete {
				t.Errorf("complete = %v, want %v", complete, tt.complete)
			}
			n := 0
			for _, p := range list {
				if p.path == filepath.Join(r, ".git", "config") {
					n++
				}
			}
			if n != 1 {
				t.Errorf(".git/config is listed %d times, want once", n)
			}
		})
	}
}

// TestConfigReaderReadsEachFileOnce: the walks of the red team's
// configuration (a dozen includes of itself, which git's depth limit of 10
// alone let run to 12^10 reads) and of a dozen files that each include
// all twelve read each file once.
func TestConfigReaderReadsEachFileOnce(t *testing.T) {
	r, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(r, "self")
	if err := os.WriteFile(self, []byte(strings.Repeat("[include]\n\tpath = self\n", 12)), 0o644); err != nil {
		t.Fatal(err)
	}
	var all string
	for i := range 12 {
		all += fmt.Sprintf("[include]\n\tpath = %d\n", i)
	}
	for i := range 12 {
		if err := os.WriteFile(filepath.Join(r, fmt.Sprint(i)), []byte(all), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		start string
		files int
	}{{self, 1}, {filepath.Join(r, "0"), 12}} {
		c := newConfigReader("")
		var refs gitConfigRefs
		c.readGitConfig(tt.start, &refs)
		if read := maxConfigFiles - c.files; read != tt.files || c.short {
			t.Errorf("walk from %s read %d files (short %v), want %d", filepath.Base(tt.start), read, c.short, tt.files)
		}
	}
}
