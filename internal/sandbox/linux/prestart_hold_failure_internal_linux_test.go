package linux

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/testenv"
)

// TestPrestartedHoldFailureLeavesNoPlaceholder: when a Run that would take
// a prestarted init (airlock exec, airlock call) cannot make every
// placeholder its sandbox needs, the call fails naming the path, and the
// placeholders it made before the failure are gone from the user's tree,
// as they are when a Run without a prestarted init fails the same way.
// Before, the prestarted path dropped the init but kept its hold: an
// `airlock exec` in a tree whose .git could not take a placeholder (a
// read-only mount, or a broker short of descriptors) left .bashrc,
// .vscode, .cargo, ... in the tree for good, until some later airlock
// start over the same state directory swept them.
func TestPrestartedHoldFailureLeavesNoPlaceholder(t *testing.T) {
	for _, prestart := range []bool{true, false} {
		name := "cold"
		if prestart {
			name = "prestarted"
		}
		t.Run(name, func(t *testing.T) {
			b, _ := prestartBackend(t)
			dir := t.TempDir()
			// ro: a directory where no placeholder can be made (EROFS),
			// reached after .bashrc's placeholder is made.
			ro := filepath.Join(dir, "ro")
			if err := os.Mkdir(ro, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := unix.Mount(testenv.FSSource, ro, "tmpfs", unix.MS_RDONLY, "size=64k"); err != nil {
				t.Skipf("cannot mount a read-only tmpfs here: %v", err)
			}
			t.Cleanup(func() { _ = unix.Unmount(ro, unix.MNT_DETACH) })
			var out bytes.Buffer
			spec := func() *sandbox.Spec {
				return &sandbox.Spec{
					Command:  []string{"/bin/true"},
					Env:      []string{"PATH=/usr/bin:/bin"},
					Mounts:   []sandbox.Mount{{Source: dir, Writable: true}},
					Cwd:      dir,
					ReadOnly: []string{filepath.Join(dir, ".bashrc"), filepath.Join(dir, ".cargo", "config"), filepath.Join(ro, ".envrc")},
					Limits:   sandbox.Limits{AllowUnenforced: true},
					Stdout:   &out, Stderr: &out,
				}
			}
			var pid int
			var dirs []string
			if prestart {
				b.Prestart(spec())
				pid, dirs = initOf(prestartedNow(t, b))
			}
			_, err := b.Run(context.Background(), spec())
			if err == nil {
				t.Fatal("the call ran, though no placeholder can be made in a read-only directory")
			}
			if !strings.Contains(err.Error(), filepath.Join(ro, ".envrc")) || !errors.Is(err, unix.EROFS) {
				t.Errorf("the error does not name the path and the cause: %v", err)
			}
			for _, p := range []string{".bashrc", ".cargo"} {
				if _, err := os.Lstat(filepath.Join(dir, p)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("after the failed call, the placeholder %s is still in the tree (%v)", p, err)
				}
			}
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if e.Name() != "ro" {
					t.Errorf("after the failed call, %s is in the tree", e.Name())
				}
			}
			if prestart {
				checkGone(t, "the prestarted init", pid, dirs)
			}
			if len(b.placeholders.refs) != 0 {
				t.Errorf("the backend still holds %d placeholders", len(b.placeholders.refs))
			}
		})
	}
}
