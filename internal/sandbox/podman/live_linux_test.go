package podman

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLiveTools(t *testing.T) {
	b := newLive(t)
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "a.txt"), []byte("alpha\nbeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := baseSpec(work)
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"read_file", map[string]any{"path": filepath.Join(work, "a.txt")}, "beta"},
		{"write_file", map[string]any{"path": filepath.Join(work, "b.txt"), "content": "gamma\n"}, "wrote"},
		{"edit_file", map[string]any{"path": filepath.Join(work, "b.txt"), "old_string": "gamma", "new_string": "delta"}, ""},
		{"glob", map[string]any{"pattern": "*.txt"}, "b.txt"},
		{"grep", map[string]any{"pattern": "delta"}, "b.txt"},
		{"shell", map[string]any{"command": "id -u; echo hi > c.txt; cat c.txt"}, "0\nhi"},
	} {
		out, res := call(t, b, spec, tc.tool, tc.args)
		if res.ExitCode != 0 || out.IsError || !strings.Contains(out.Content, tc.want) {
			t.Errorf("%s: exit %d, output %+v, want %q", tc.tool, res.ExitCode, out, tc.want)
		}
	}
	got, err := os.ReadFile(filepath.Join(work, "b.txt"))
	if err != nil || string(got) != "delta\n" {
		t.Errorf("b.txt = %q, %v; want the edit on the host", got, err)
	}
	fi, err := os.Stat(filepath.Join(work, "c.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if uid := fileUID(fi); uid != uint32(os.Getuid()) {
		t.Errorf("c.txt is owned by host uid %d, want %d (the tree's owner, through the idmapped mount)", uid, os.Getuid())
	}
}

// TestLiveTagRefused: a tag is refused, naming the digest to use.
func TestLiveTagRefused(t *testing.T) {
	needPodman(t)
	_, err := New(&Options{Image: live.tag, Executable: live.exe})
	if err == nil || !strings.Contains(err.Error(), "not pinned by digest") || !strings.Contains(err.Error(), live.img) {
		t.Errorf("New with a tag = %v, want a refusal naming %s", err, live.img)
	}
}
