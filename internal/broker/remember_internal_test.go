package broker

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
)

// TestRememberKeepsRepositories checks the memory of protected paths: names
// a sandbox makes in bulk past the memory's bound do not push out a nested
// repository an earlier session recorded (scan_padding.txtar shows a later
// session keeping what the memory holds).
func TestRememberKeepsRepositories(t *testing.T) {
	old := maxRemembered
	maxRemembered = 10
	t.Cleanup(func() { maxRemembered = old })
	records := t.TempDir()
	tree, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range map[string]string{"zzz/.git/HEAD": "ref: refs/heads/main\n", "zzz/.git/config": "[core]\n"} {
		if err := os.MkdirAll(filepath.Join(tree, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tree, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(tree, "zzz", ".git")
	open := func() *grant.Grant {
		g, err := grant.FromFlags(tree, grant.Flags{})
		if err != nil {
			t.Fatal(err)
		}
		return rememberProtected(records, g, slog.New(slog.DiscardHandler))
	}
	if g := open(); !slices.Contains(g.Protected(), target) {
		t.Fatalf("the first session does not protect %s", target)
	}
	// A sandbox makes more protected names than the memory holds, all
	// sorting before the repository.
	for i := range 3 * maxRemembered {
		d := filepath.Join(tree, fmt.Sprintf("a%03d", i))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, ".bashrc"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if g := open(); !slices.Contains(g.Protected(), target) {
			t.Errorf("a later session does not protect %s", target)
		}
	}
	// The memory, which a later session whose scan stops short relies on,
	// still holds the repository.
	b, err := os.ReadFile(memoryFile(filepath.Join(records, memoryDir), tree))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), strconv.Quote(target)) {
		t.Errorf("the memory lost %s:\n%s", target, b)
	}
}

// TestRememberWritesOnlyChanges: a session that finds what the last one
// recorded leaves the memory's file as it is (the same inode: not made
// again and renamed into place), and one that finds more replaces it.
func TestRememberWritesOnlyChanges(t *testing.T) {
	records := t.TempDir()
	tree, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	open := func() {
		g, err := grant.FromFlags(tree, grant.Flags{})
		if err != nil {
			t.Fatal(err)
		}
		rememberProtected(records, g, slog.New(slog.DiscardHandler))
	}
	file := memoryFile(filepath.Join(records, memoryDir), tree)
	stat := func() os.FileInfo {
		t.Helper()
		fi, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	open()
	first := stat()
	open()
	if !os.SameFile(stat(), first) {
		t.Error("a session that found nothing new rewrote the memory")
	}
	if err := os.MkdirAll(filepath.Join(tree, "sub", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, c := range map[string]string{"sub/.git/HEAD": "ref: refs/heads/main\n", "sub/.git/config": "[core]\n"} {
		if err := os.WriteFile(filepath.Join(tree, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	open()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), strconv.Quote(filepath.Join(tree, "sub", ".git"))) {
		t.Errorf("a session that found a repository did not record it: %s", b)
	}
	if os.SameFile(stat(), first) {
		t.Error("the memory's file was changed in place, not replaced whole")
	}
}

// TestRememberKeepsPathBytes: a protected path whose name is not UTF-8 (a
// nested repository a sandbox made under such a name) is remembered as
// its bytes, so the next session protects that path and not one with
// U+FFFD in its place; a memory of the older form is still read.
func TestRememberKeepsPathBytes(t *testing.T) {
	records := t.TempDir()
	tree, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(tree, "r\xff\xfe", ".git")
	if err := os.MkdirAll(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := grant.FromFlags(tree, grant.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	rememberProtected(records, g, slog.New(slog.DiscardHandler))
	b, err := os.ReadFile(memoryFile(filepath.Join(records, memoryDir), tree))
	if err != nil {
		t.Fatal(err)
	}
	list, err := decodeMemory(b)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(list, func(p grant.ProtectedPath) bool { return p.Path == target }) {
		t.Errorf("the memory does not hold %q: %+v", target, list)
	}
	old, err := decodeMemory([]byte(`[{"path":"/w/.git","name":".git","dir":true}]`))
	if err != nil || len(old) != 1 || old[0] != (grant.ProtectedPath{Path: "/w/.git", Name: ".git", Dir: true}) {
		t.Errorf("an older memory read as %+v, %v", old, err)
	}
}
