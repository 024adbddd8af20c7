package grant_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlockhq/airlock/grant"
)

// NeverMounted holds exactly for paths every grant refuses to mount,
// symlinks resolved.
func TestNeverMounted(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "shm")
	if err := os.Symlink("/dev/shm", link); err != nil {
		t.Fatal(err)
	}
	toDir := filepath.Join(dir, "todir")
	if err := os.Symlink(dir, toDir); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path string
		want bool
	}{
		{"/dev", true}, {"/dev/shm", true}, {"/proc/self", true}, {"/sys", true},
		{link, true},
		{dir, false}, {toDir, false}, {"/", false}, {"/tmp", false}, {"/run", false},
		{"/devices", false}, {"relative", false}, {filepath.Join(dir, "missing"), false},
	} {
		if got := grant.NeverMounted(tt.path); got != tt.want {
			t.Errorf("NeverMounted(%q) = %v, want %v", tt.path, got, tt.want)
		}
		if !tt.want || tt.path == link {
			continue
		}
		if _, err := grant.Parse([]byte(fmt.Sprintf("[paths]\nread_only = [%q]\n", tt.path)), "g.toml", dir); err == nil {
			t.Errorf("a grant may name %q, which NeverMounted says none can", tt.path)
		}
	}
}
