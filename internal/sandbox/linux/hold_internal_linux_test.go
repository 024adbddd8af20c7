package linux

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

// BenchmarkHold is the host's part of claiming a warm sandbox in a plain
// directory: making and locking the placeholders of every protected and
// denied path of the default grant, then releasing them.
func BenchmarkHold(b *testing.B) {
	dir := b.TempDir()
	g, err := grant.FromFlags(dir, grant.Flags{})
	if err != nil {
		b.Fatal(err)
	}
	cfg := &initproto.Config{Mounts: []initproto.Mount{{Source: dir, Target: dir, Writable: true}},
		Masks: g.Masks(), ReadOnly: g.Protected(), ReadOnlyDirs: g.ProtectedDirs()}
	var p placeholders
	b.ResetTimer()
	for range b.N {
		held, err := p.hold(cfg)
		if err != nil {
			b.Fatal(err)
		}
		p.release(held)
	}
	b.ReportMetric(float64(len(cfg.Placeholders)), "placeholders")
}

// The host makes a placeholder for a missing protected path in the tree
// the sandbox sees at its parent: not below a read-only grant nested in a
// writable one (the writable tree there is hidden, and the sandbox cannot
// create the name anyway), and not in the read-only grant itself.
func TestHoldUsesTheGrantHoldingTheParent(t *testing.T) {
	w, ro := t.TempDir(), t.TempDir() // w/ro, the mount point, is made by the init
	cfg := &initproto.Config{
		Mounts:   []initproto.Mount{{Source: w, Target: "/w", Writable: true}, {Source: ro, Target: "/w/ro"}},
		ReadOnly: []string{"/w/ro/.git/hooks", "/w/.vscode"},
	}
	var p placeholders
	held, err := p.hold(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.release(held)
	if want := []string{"/w/.vscode"}; !slices.Equal(cfg.Placeholders, want) {
		t.Errorf("placeholders %q, want %q", cfg.Placeholders, want)
	}
	for _, hidden := range []string{filepath.Join(w, "ro"), filepath.Join(ro, ".git")} {
		if _, err := os.Lstat(hidden); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v, want no placeholder", hidden, err)
		}
	}
}
