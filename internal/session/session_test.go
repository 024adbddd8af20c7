package session

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/sandbox"
)

// TestRecordsDir: the flag wins, then $AIRLOCK_STATE_DIR, then
// $XDG_STATE_HOME, then ~/.local/state: the one place the Go API, every
// command and airlock log agree on.
func TestRecordsDir(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skipf("no home directory: %v", err)
	}
	for _, tc := range []struct {
		name, flag string
		env        map[string]string
		want       string
	}{
		{"flag", "/r/flag", map[string]string{"AIRLOCK_STATE_DIR": "/r/state", "XDG_STATE_HOME": "/r/xdg"}, "/r/flag"},
		{"state dir", "", map[string]string{"AIRLOCK_STATE_DIR": "/r/state", "XDG_STATE_HOME": "/r/xdg"}, "/r/state"},
		{"xdg", "", map[string]string{"XDG_STATE_HOME": "/r/xdg"}, "/r/xdg/airlock/sessions"},
		{"home", "", nil, filepath.Join(home, ".local", "state", "airlock", "sessions")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RecordsDir(tc.flag, func(k string) string { return tc.env[k] })
			if err != nil || got != tc.want {
				t.Errorf("RecordsDir = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestPrepare: unsandboxed parts resolve file tools beneath the grant's
// working directory and report no isolation; unsandboxed with remote
// hands is refused before any connection is made.
func TestPrepare(t *testing.T) {
	dir := t.TempDir()
	g, err := grant.FromFlags(dir, grant.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	env := func(k string) string {
		if k == "AIRLOCK_STATE_DIR" {
			return filepath.Join(dir, "state")
		}
		return ""
	}
	p, err := Prepare(&Config{Grant: g, Getenv: env, Unsandboxed: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Root != g.WorkDir() || !p.Backend.Report().Unsandboxed || p.RecordsDir != filepath.Join(dir, "state") {
		t.Errorf("unsandboxed parts: root %q, report %+v, records %q", p.Root, p.Backend.Report(), p.RecordsDir)
	}
	if o := p.Options(); o.ToolRoot != p.Root || o.RecordsDir != p.RecordsDir || o.LoadSecret == nil {
		t.Errorf("broker options %+v do not carry the parts", o)
	}
	dialled := false
	_, err = Prepare(&Config{Grant: g, Getenv: env, Unsandboxed: true, Remote: func(sandbox.Backend, *[]string) (sandbox.Backend, error) {
		dialled = true
		return nil, errors.New("dialled")
	}})
	if err == nil || !strings.Contains(err.Error(), "remote hands always sandbox") || dialled {
		t.Errorf("unsandboxed with remote hands: %v (dialled %v); want a refusal before dialling", err, dialled)
	}
	if _, err := Prepare(&Config{}); err == nil {
		t.Error("Prepare without a grant: nil error")
	}
}
