package broker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// TestGrantFileWithFlagsIsNamed: a session over a grant file with flags
// added (airlock call --grant project.toml --ro DIR) names the file in its
// labels and in its session record, as a session over the file alone does;
// it was "grant from flags", as if no file governed it.
func TestGrantFileWithFlagsIsNamed(t *testing.T) {
	ws := t.TempDir()
	file := filepath.Join(ws, "project.toml")
	if err := os.WriteFile(file, []byte("[paths]\nread_write = [\".\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := grant.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	g, err = g.With(ws, grant.Flags{AllowUnenforcedLimits: true})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{ws: ws, records: t.TempDir(), grant: g}
	s := f.open(t, sandboxtest.Native(t), nil)
	res := call(t, s, "read_file", `{"path":"/etc/shadow"}`)
	if !strings.Contains(res.Output.Content, "grant project.toml and flags") {
		t.Errorf("refusal label %q does not name project.toml", res.Output.Content)
	}
	for _, r := range records(t, f.records) {
		if r.Kind == audit.KindSession && r.Decision == "open" && !strings.Contains(r.Rule, "project.toml") {
			t.Errorf("session record's rule %q does not name the grant file project.toml", r.Rule)
		}
	}
}
