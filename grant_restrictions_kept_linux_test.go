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

// TestOptionsKeepGrantRestrictions: a grant the embedding program narrowed
// after building it (Guard hides a file of its own inside the granted
// tree, Remember protects a nested path) keeps every restriction through
// Open, whatever other Options say: AllowUnenforcedLimits is about limits,
// and once rebuilt the grant from its flags and dropped them, so the
// sandbox read the hidden file and wrote the protected one.
func TestOptionsKeepGrantRestrictions(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	hidden := filepath.Join(dir, "embedder-token")
	kept := filepath.Join(dir, "embedder.conf")
	for _, f := range []string{hidden, kept} {
		if err := os.WriteFile(f, []byte("s3cret-embedder-value\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	g, err := grant.FromFlags(dir, grant.Flags{ReadWrite: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if g, err = g.Guard([]string{hidden}, []string{kept}); err != nil {
		t.Fatal(err)
	}
	for _, allow := range []bool{false, true} {
		s, err := airlock.Open(&airlock.Options{Grant: g, RecordsDir: t.TempDir(), AllowUnenforcedLimits: allow})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		res, err := s.Call(ctx, "read_file", map[string]any{"path": hidden})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(res.Text, "s3cret") || !res.IsError {
			t.Errorf("AllowUnenforcedLimits=%v: read_file of the hidden file: %v %q", allow, res.Class, res.Text)
		}
		res, err = s.Call(ctx, "shell", map[string]any{"command": "cat " + hidden + "; echo x > " + kept})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(res.Text, "s3cret") {
			t.Errorf("AllowUnenforcedLimits=%v: the shell read the hidden file: %q", allow, res.Text)
		}
		if b, _ := os.ReadFile(kept); string(b) != "s3cret-embedder-value\n" {
			t.Errorf("AllowUnenforcedLimits=%v: the shell wrote the kept file: %q (%q)", allow, b, res.Text)
			os.WriteFile(kept, []byte("s3cret-embedder-value\n"), 0o600)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
