package linux

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// TestPlaceholdersGoneFromAMovedTree: a user who renames the project
// directory while a call runs (mv proj proj-old) finds no placeholder in
// it once the call is over. The placeholders are released by the inodes
// the backend holds, wherever they are now; before, the release looked
// for them at the paths they were made at, found nothing there, and left
// .bashrc, .vscode, .cargo/config, ... in the moved tree for good (the
// next start's sweep looks at the same old paths).
func TestPlaceholdersGoneFromAMovedTree(t *testing.T) {
	b, _ := prestartBackend(t)
	top := t.TempDir()
	dir := filepath.Join(top, "proj")
	moved := filepath.Join(top, "proj-old")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		_, err := b.Run(context.Background(), &sandbox.Spec{
			Command:      []string{"/bin/sh", "-c", "touch started; sleep 1"},
			Env:          []string{"PATH=/usr/bin:/bin"},
			Mounts:       []sandbox.Mount{{Source: dir, Writable: true}},
			Cwd:          dir,
			ReadOnly:     []string{filepath.Join(dir, ".bashrc"), filepath.Join(dir, ".vscode"), filepath.Join(dir, ".cargo", "config")},
			ReadOnlyDirs: []string{filepath.Join(dir, ".vscode")},
			Limits:       sandbox.Limits{AllowUnenforced: true},
			Stdout:       &out, Stderr: &out,
		})
		done <- err
	}()
	for deadline := time.Now().Add(5 * time.Second); ; {
		if _, err := os.Lstat(filepath.Join(dir, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command did not start")
		}
		time.Sleep(time.Millisecond)
	}
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("%v (output %q)", err, out.String())
	}
	ents, err := os.ReadDir(moved)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == "started" {
			continue
		}
		t.Errorf("after the call, %s is in the moved tree", e.Name())
	}
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the tree's old path exists again (%v)", err)
	}
	if len(b.placeholders.refs) != 0 {
		t.Errorf("the backend still holds %d placeholders", len(b.placeholders.refs))
	}
}
