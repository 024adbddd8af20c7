package linux

import (
	"github.com/airlockhq/airlock/internal/testenv"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrustedBeside: the separate init is used only where no one but the
// airlock binary's owner (or root) could have put or swapped it.
func TestTrustedBeside(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make files of other owners")
	}
	setup := func(t *testing.T, dirMode, fileMode os.FileMode, link bool, fileUID int) (self, path string) {
		dir := filepath.Join(t.TempDir(), "bin")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		self = filepath.Join(dir, "airlock")
		path = filepath.Join(dir, InitCommand)
		if err := os.WriteFile(self, []byte("self"), 0o755); err != nil {
			t.Fatal(err)
		}
		if link {
			if err := os.Symlink(self, path); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(path, []byte("init"), 0o755); err != nil {
			t.Fatal(err)
		}
		if !link {
			if err := os.Chmod(path, fileMode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(path, fileUID, 0); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(dir, dirMode); err != nil {
			t.Fatal(err)
		}
		return self, path
	}
	for _, tc := range []struct {
		name     string
		dirMode  os.FileMode
		fileMode os.FileMode
		link     bool
		uid      int
		says     string // "" means trusted
	}{
		{"beside, owner-writable only", 0o755, 0o755, false, 0, ""},
		{"a sticky shared directory", 0o777 | os.ModeSticky, 0o755, false, 0, ""},
		{"group-writable init", 0o755, 0o775, false, 0, "written by others"},
		{"world-writable init", 0o755, 0o757, false, 0, "written by others"},
		{"a directory others may write", 0o777, 0o755, false, 0, "others may replace"},
		{"a symlink", 0o755, 0o755, true, 0, "not a regular file"},
		{"another owner", 0o755, 0o755, false, 4242, "uid 4242"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			self, path := setup(t, tc.dirMode, tc.fileMode, tc.link, tc.uid)
			err := trustedBeside(self, path)
			switch {
			case tc.says == "" && err != nil:
				t.Errorf("trustedBeside = %v, want trusted", err)
			case tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says)):
				t.Errorf("trustedBeside = %v, want an error saying %q", err, tc.says)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		dir := t.TempDir()
		self := filepath.Join(dir, "airlock")
		if err := os.WriteFile(self, nil, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := trustedBeside(self, filepath.Join(dir, InitCommand)); err == nil || !strings.Contains(err.Error(), "no "+InitCommand) {
			t.Errorf("trustedBeside = %v, want it to say there is none", err)
		}
	})
}

// TestSeparateInitRefusesOtherBinaries: a Go binary of this module that is
// not cmd/airlock-init (here a copy of this test binary), and a file that
// is no Go binary, are never the init; nothing of them stays sealed.
func TestSeparateInitRefusesOtherBinaries(t *testing.T) {
	for _, tc := range []struct {
		name, from, says string
	}{
		{"this module's test binary", os.Args[0], "not " + initPackage},
		{"not a Go binary", "/bin/sh", "build information"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			self := filepath.Join(dir, "airlock")
			testenv.CopyExecutable(t, os.Args[0], self)
			testenv.CopyExecutable(t, tc.from, filepath.Join(dir, InitCommand))
			f, _, err := separateInit(self)
			if f != nil || err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("separateInit = %v, %v; want no init and an error saying %q", f, err, tc.says)
			}
			sealed.Lock()
			defer sealed.Unlock()
			for k := range sealed.files {
				if k.path == filepath.Join(dir, InitCommand) {
					t.Errorf("the refused init is still sealed")
				}
			}
		})
	}
}
