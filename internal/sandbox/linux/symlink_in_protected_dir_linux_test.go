package linux_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
)

// TestSymlinkInsideProtectedDirectory: a symlink inside a protected
// directory leads host tools, which follow it, to its target: a hook that
// is a link into the tree (ln -s ../../scripts/pre-commit, as projects
// install their hooks), or a link a first session left in a nested
// protected directory it made (sub/.vscode/tasks.json -> ../innocent),
// which the next session holds read-only whole. The target must be as
// read-only as the file host tools take it for.
func TestSymlinkInsideProtectedDirectory(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup map[string]string // host files before the sessions
		first string            // the first session's script, "" for none
		link  string            // the protected name, a symlink
	}{
		{
			name:  "hook linked into the tree",
			setup: map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/config": "", ".git/objects/.k": "", ".git/refs/.k": "", "scripts/pre-commit": "#!/bin/sh\necho safe\n"},
			link:  ".git/hooks/pre-commit",
		},
		{
			name:  "nested tasks a first session linked",
			first: "set -e; mkdir -p sub/.vscode && printf 'safe\\n' >sub/innocent && ln -s ../innocent sub/.vscode/tasks.json && echo made",
			link:  "sub/.vscode/tasks.json",
		},
		{
			name:  "nested repository config a first session linked",
			first: "set -e; mkdir -p sub/.git/objects sub/.git/refs && printf 'ref: refs/heads/main\\n' >sub/.git/HEAD && printf 'safe\\n' >sub/cfg && ln -s ../cfg sub/.git/config && echo made",
			link:  "sub/.git/config",
		},
		{
			name:  "nested hooks directory a first session linked",
			first: "set -e; mkdir -p sub/.git/objects sub/.git/refs sub/myhooks && printf 'ref: refs/heads/main\\n' >sub/.git/HEAD && printf 'safe\\n' >sub/myhooks/pre-commit && ln -s ../myhooks sub/.git/hooks && echo made",
			link:  "sub/.git/hooks/pre-commit",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			writeTree(t, w, c.setup)
			if c.setup != nil {
				if err := os.MkdirAll(filepath.Join(w, ".git/hooks"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink("../../scripts/pre-commit", filepath.Join(w, c.link)); err != nil {
					t.Fatal(err)
				}
			}
			session := func(script string) (string, error) {
				t.Helper()
				g, err := grant.FromFlags(w, grant.Flags{})
				if err != nil {
					t.Fatal(err)
				}
				return runInGrant(t, g, w, script)
			}
			if c.first != "" {
				if out, err := session(c.first); err != nil || !strings.Contains(out, "made") {
					t.Fatalf("first session: %v\n%s", err, out)
				}
			}
			target, err := filepath.EvalSymlinks(filepath.Join(w, c.link))
			if err != nil {
				t.Fatal(err)
			}
			out, err := session("printf 'evil\\n' >" + target + "; echo wrote $?")
			t.Logf("next session: err %v, output %q", err, out)
			got, rerr := os.ReadFile(filepath.Join(w, c.link))
			if rerr != nil {
				t.Fatal(rerr)
			}
			if strings.Contains(string(got), "evil") {
				t.Errorf("%s (a symlink to %s) now reads %q: the session wrote it through its target", c.link, target, got)
			}
		})
	}
}

// TestSymlinkInsideProtectedDirectoryOtherTree: a hook linked into another
// read-write tree of the same grant (a shared scripts checkout granted
// beside the project) is as read-only as one linked into its own.
func TestSymlinkInsideProtectedDirectoryOtherTree(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	proj, shared := filepath.Join(base, "proj"), filepath.Join(base, "shared")
	writeTree(t, proj, map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/config": "", ".git/objects/.k": "", ".git/refs/.k": ""})
	writeTree(t, shared, map[string]string{"hooks/pre-commit": "#!/bin/sh\necho safe\n"})
	if err := os.MkdirAll(filepath.Join(proj, ".git/hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(shared, "hooks/pre-commit")
	if err := os.Symlink(target, filepath.Join(proj, ".git/hooks/pre-commit")); err != nil {
		t.Fatal(err)
	}
	g, err := grant.FromFlags(proj, grant.Flags{ReadWrite: []string{proj, shared}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := runInGrant(t, g, proj, "printf 'evil\\n' >"+target+"; echo wrote $?")
	t.Logf("session: err %v, output %q", err, out)
	got, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(got), "evil") {
		t.Errorf("the hook %s, linked from %s/.git/hooks, was written: %q", target, proj, got)
	}
}
