package linux

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLocalFS: the raw placeholder calls are used on a local file system
// only; /proc stands in for one whose calls may wait on something else.
func TestLocalFS(t *testing.T) {
	for _, c := range []struct {
		path string
		want bool
	}{{"/proc", false}, {"/sys", false}, {"/dev/shm", true}} {
		f, err := os.Open(c.path)
		if err != nil {
			t.Fatal(err)
		}
		var st unix.Statfs_t
		if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		if c.want && st.Type != unix.TMPFS_MAGIC {
			f.Close()
			t.Logf("%s is not a tmpfs here: skipped", c.path)
			continue
		}
		if got := localFS(int(f.Fd())); got != c.want {
			t.Errorf("localFS(%s) = %v, want %v", c.path, got, c.want)
		}
		f.Close()
	}
}
