package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// TestRunExampleCapsule runs examples/capsule-agent as a user would: it
// greps, reads and edits through airlock's tools and checks its work with
// a background command, whose shell runs in a fresh native sandbox.
func TestRunExampleCapsule(t *testing.T) {
	sandboxtest.Native(t)
	state := runEnv(t)
	ws := t.TempDir()
	for name, body := range map[string]string{"a.txt": "one TODO here\nand TODO there\n", "b.txt": "nothing\n"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := exampleCapsule(t)
	code, stdout, stderr := runCLI(t, ws, "run", dir, "--", "TODO")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"found 1 file(s) with TODO", "replaced 2 TODO", "check: "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "one DONE here\nand DONE there\n" {
		t.Errorf("a.txt is %q", b)
	}
	backends := map[string]string{}
	for _, r := range records(t, state) {
		if r.Kind == audit.KindCall {
			backends[r.Tool] = r.Backend
			if r.Capsule == nil || r.Capsule.Name != "capsule-agent" {
				t.Errorf("record of %s lacks the capsule: %+v", r.Tool, r.Capsule)
			}
		}
	}
	for _, tool := range []string{"grep", "read_file", "edit_file"} {
		if backends[tool] != "linux" {
			t.Errorf("%s ran on backend %q, want linux; all: %v", tool, backends[tool], backends)
		}
	}
	if _, ok := backends["background_command"]; !ok {
		t.Errorf("no background_command record: %v", backends)
	}
}
