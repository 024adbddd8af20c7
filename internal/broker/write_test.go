package broker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// TestWritesInSandbox: write_file and edit_file replace files through the
// real sandbox, in a granted directory (a temporary file renamed over the
// old one, which Landlock and the mounts must allow) and in a granted single
// file (a bind mount in a directory the sandbox cannot write: written in
// place), keeping the mode and leaving no temporary file (issue 11.1).
func TestWritesInSandbox(t *testing.T) {
	ws := t.TempDir()
	dir := filepath.Join(ws, "rw")
	single := filepath.Join(ws, "ro", "single.txt")
	for p, content := range map[string]string{filepath.Join(dir, "a.txt"): "alpha\n", single: "single\n"} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	g, err := grant.FromFlags(ws, grant.Flags{ReadWrite: []string{dir, single}})
	if err != nil {
		t.Fatalf("grant.FromFlags: %v", err)
	}
	s, err := broker.Open(&broker.Options{Grant: g, Backend: sandboxtest.Native(t), RecordsDir: t.TempDir()})
	if err != nil {
		t.Fatalf("broker.Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })

	// The working directory is the first granted path, rw.
	for _, c := range []struct{ tool, args, file, want string }{
		{"write_file", `{"path":"a.txt","content":"written\n"}`, filepath.Join(dir, "a.txt"), "written\n"},
		{"edit_file", `{"path":"a.txt","old_string":"written","new_string":"edited"}`, filepath.Join(dir, "a.txt"), "edited\n"},
		{"write_file", `{"path":"new.txt","content":"new\n"}`, filepath.Join(dir, "new.txt"), "new\n"},
		{"write_file", `{"path":"` + single + `","content":"written\n"}`, single, "written\n"},
		{"edit_file", `{"path":"` + single + `","old_string":"written","new_string":"edited"}`, single, "edited\n"},
	} {
		res := call(t, s, c.tool, c.args)
		if res.Class != broker.ClassOK || res.Output.IsError {
			t.Errorf("%s %s: class %s, output %q", c.tool, c.args, res.Class, res.Output.Content)
			continue
		}
		if b, _ := os.ReadFile(c.file); string(b) != c.want {
			t.Errorf("%s %s: %s holds %q, want %q", c.tool, c.args, c.file, b, c.want)
		}
	}
	for _, p := range []string{filepath.Join(dir, "a.txt"), single} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o640 {
			t.Errorf("%s mode = %v (%v), want 0640 kept", p, fi.Mode(), err)
		}
	}
	for _, d := range []string{dir, filepath.Dir(single)} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if strings.Contains(e.Name(), ".airlock-") {
				t.Errorf("temporary file left in %s: %s", d, e.Name())
			}
		}
	}
}
