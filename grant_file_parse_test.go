package airlock_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/grant"
)

// TestParsedGrantFileStaysReadOnly: a grant a program reads itself and
// builds with grant.Parse (its name the file's, relative paths from its
// directory) keeps its file read-only to the session's sandboxes, as
// grant.Load's does, wherever the program runs from: a sandbox that could
// rewrite the grant would widen the next session the program opens.
func TestParsedGrantFileStaysReadOnly(t *testing.T) {
	project, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The program runs elsewhere, as a service does.
	t.Chdir(t.TempDir())
	const text = "[paths]\nread_write = [\".\"]\n[limits]\nunenforced = \"allow\"\n"
	file := filepath.Join(project, "airlock.toml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	g, err := grant.Parse(data, "airlock.toml", project)
	if err != nil {
		t.Fatal(err)
	}
	s, err := airlock.Open(&airlock.Options{Grant: g, RecordsDir: t.TempDir(), Pool: -1})
	if err != nil {
		t.Skipf("no session here: %v", err)
	}
	defer s.Close()
	res, err := s.Call(context.Background(), "write_file", map[string]any{"path": "airlock.toml", "content": text + "# write_file was here\n"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Refused {
		t.Errorf("write_file of the grant file was not refused:\n%s", res.Text)
	}
	res, err = s.Call(context.Background(), "shell", map[string]any{"command": "echo '# shell was here' >> airlock.toml"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(file); strings.Contains(string(got), "was here") {
		t.Errorf("a call rewrote the session's grant file:\n%s\n(the shell call: %s)", got, res.Text)
	}
}
