package airlock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Options.AllowUnenforcedLimits reaches the session's grant, with or
// without a grant of its own.
func TestOpenAllowUnenforcedLimits(t *testing.T) {
	for _, allow := range []bool{false, true} {
		s, err := Open(&Options{Dir: t.TempDir(), RecordsDir: t.TempDir(), Unsandboxed: true, Pool: -1, AllowUnenforcedLimits: allow})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.s.Grant().AllowsUnenforcedLimits(); got != allow {
			t.Errorf("AllowUnenforcedLimits %v: the grant allows unenforced limits: %v", allow, got)
		}
		s.Close()
	}
}

// Open without Init fails at once with a sentence naming Init, rather than
// every call failing with "the tool could not run".
func TestOpenWithoutInit(t *testing.T) {
	initialised.Store(false)
	defer initialised.Store(true)
	_, err := Open(&Options{Dir: t.TempDir(), RecordsDir: t.TempDir(), Pool: -1})
	if !errors.Is(err, ErrNoInit) || !strings.Contains(err.Error(), "airlock.Init()") {
		t.Fatalf("Open without Init: %v, want ErrNoInit naming airlock.Init()", err)
	}
}

// A grant whose secret is not set opens; only the calls that carry the
// secret fail.
func TestOpenWithUnsetSecret(t *testing.T) {
	dir := t.TempDir()
	gf := filepath.Join(dir, "grant.toml")
	if err := os.WriteFile(gf, []byte(`
[network]
hosts = ["api.example.com"]
[secrets.TOKEN]
from = "env:AIRLOCK_TEST_NEVER_SET"
tools = ["http_fetch"]
hosts = ["api.example.com"]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(&Options{GrantFile: gf, RecordsDir: t.TempDir(), Unsandboxed: true, Pool: -1})
	if err != nil {
		t.Fatalf("Open with an unset secret: %v", err)
	}
	defer s.Close()
	res, err := s.Call(context.Background(), "http_fetch", map[string]any{"url": "https://api.example.com/"})
	if err != nil || !res.Refused || !strings.Contains(res.Text, `secret "TOKEN", which could not be read`) {
		t.Fatalf("http_fetch needing the unset secret: %v %+v", err, res)
	}
}
