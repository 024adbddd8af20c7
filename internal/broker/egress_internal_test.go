package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
)

// The kernel buffers of a sandbox's tunnels together stay within its
// memory limit, at least 1 MiB each, and unbounded where that is more than
// the kernel would give a socket anyway.
func TestSocketBuffer(t *testing.T) {
	for _, tt := range []struct {
		memory int64
		want   int
	}{
		{0, 0},
		{64 << 20, 1 << 20},
		{16 << 20, 1 << 20},
		{1 << 30, 16 << 20},
		{2 << 30, 32 << 20},
		{4 << 30, 0},
	} {
		if got := socketBuffer(tt.memory); got != tt.want {
			t.Errorf("socketBuffer(%d MiB) = %d, want %d", tt.memory>>20, got, tt.want)
		}
	}
}

// A proxy's socket goes where no grant, of this session or any other, can
// make it visible to a sandbox: every sandbox runs as the broker's user,
// so only the directory's place keeps other sandboxes from the socket.
func TestSocketDirNoGrantCanName(t *testing.T) {
	if !grant.NeverMounted("/dev/shm") {
		t.Skip("/dev/shm is not in /dev here; proxies fall back to TMPDIR")
	}
	t.Setenv("TMPDIR", t.TempDir())
	g, err := grant.Parse([]byte("[paths]\nread_only = [\".\"]\n[network]\nhosts = [\"example.com\"]\n"), "g.toml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir, err := socketDir(g)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if !grant.NeverMounted(dir) {
		t.Errorf("socket directory %s is one a grant can name", dir)
	}
	for _, p := range []string{dir, filepath.Dir(dir)} {
		if _, err := grant.Parse([]byte(fmt.Sprintf("[paths]\nread_only = [%q]\n", p)), "other.toml", t.TempDir()); err == nil {
			t.Errorf("a grant may name %s, which holds the proxy's socket directory", p)
		}
	}
}

// TestSocketDirSkipsTooLongBase checks that a base directory whose socket
// path would be too long for a Unix socket (a long TMPDIR) is passed over
// for the next, with the reason kept, instead of failing every networked
// call when the proxy listens.
func TestSocketDirSkipsTooLongBase(t *testing.T) {
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
	if err := os.Mkdir(long, 0o700); err != nil {
		t.Fatal(err)
	}
	short := t.TempDir()
	was := socketBases
	socketBases = func() []string { return []string{long, short} }
	defer func() { socketBases = was }()
	g, err := grant.Parse([]byte("[paths]\nread_only = [\".\"]\n"), "g.toml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir, err := socketDir(g)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if filepath.Dir(dir) != short {
		t.Errorf("socket directory %s, want one in %s", dir, short)
	}
	if ents, _ := os.ReadDir(long); len(ents) != 0 {
		t.Errorf("%d entries left in the too-long base", len(ents))
	}
	socketBases = func() []string { return []string{long} }
	if _, err := socketDir(g); err == nil || !strings.Contains(err.Error(), "past the 107") {
		t.Errorf("only a too-long base: err %v", err)
	}
}
