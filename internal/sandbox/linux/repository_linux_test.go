package linux_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/testenv"
)

// TestNoRepositoryForHostGit runs, in a real sandbox, the ways a sandbox
// could leave host git a configuration to run code from, each with a
// marker file that git would create on the host if it took the planted
// configuration: a bare repository planted at the top of a plain tree, a
// linked worktree's commondir and config.worktree redirected (the worktree
// itself outside the grant), and the hooks and config of a bare
// repository that is the granted tree. Then host git runs where a user
// would run it, and the marker must not exist.
func TestNoRepositoryForHostGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		testenv.RequireFeature(t, "git, to test what host git finds after a call")
	}
	hostGit := func(t *testing.T, dir string, args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(git, append([]string{"-c", "user.email=a@b", "-c", "user.name=u"}, args...)...)
		cmd.Dir = dir
		// No repository above the test's directories may answer for them.
		cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(filepath.Dir(dir)), "GIT_PAGER=cat", "PAGER=cat")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	mustGit := func(t *testing.T, dir string, args ...string) {
		t.Helper()
		if out, err := hostGit(t, dir, args...); err != nil {
			t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
		}
	}
	// evilConfig makes git touch marker when it reads the config: an alias
	// runs only when called, so the pager, fsmonitor and a hook all do.
	evilConfig := func(marker string) string {
		return "[core]\n\tpager = touch " + marker + "\n\tfsmonitor = touch " + marker + "; false\n\thooksPath = /nonexistent\n"
	}
	run := func(t *testing.T, w, script string) string {
		t.Helper()
		g, err := grant.FromFlags(w, grant.Flags{})
		if err != nil {
			t.Fatal(err)
		}
		out, err := runInGrant(t, g, w, script)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	newBase := func(t *testing.T) string {
		t.Helper()
		base, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return base
	}
	noMarker := func(t *testing.T, marker, out string) {
		t.Helper()
		if _, err := os.Lstat(marker); err == nil {
			t.Errorf("host git ran the sandbox's configuration (%s exists); the sandbox's output:\n%s", marker, out)
		}
	}

	t.Run("bare repository planted at the top", func(t *testing.T) {
		base := newBase(t)
		w := filepath.Join(base, "w")
		marker := filepath.Join(base, "marker")
		if err := os.Mkdir(w, 0o755); err != nil {
			t.Fatal(err)
		}
		out := run(t, w, `printf 'ref: refs/heads/main\n' > HEAD; mkdir -p objects refs/heads hooks
printf '`+evilConfig(marker)+`' > config; ls -a; echo planted`)
		if !strings.Contains(out, "planted") {
			t.Fatalf("the script did not run:\n%s", out)
		}
		if got, err := hostGit(t, w, "rev-parse", "--git-dir"); err == nil {
			t.Errorf("host git takes %s for a repository (git dir %q)", w, strings.TrimSpace(got))
		}
		hostGit(t, w, "log")
		hostGit(t, w, "status")
		noMarker(t, marker, out)
	})

	t.Run("HEAD written once another call's placeholder leaves", func(t *testing.T) {
		// Call A holds HEAD; a session that starts meanwhile must hold it
		// too, not take the tree for a bare repository because of A's
		// placeholder, so that B cannot write HEAD once A has ended.
		base := newBase(t)
		w := filepath.Join(base, "w")
		if err := os.Mkdir(w, 0o755); err != nil {
			t.Fatal(err)
		}
		gA, err := grant.FromFlags(w, grant.Flags{})
		if err != nil {
			t.Fatal(err)
		}
		aDone := make(chan string, 1)
		go func() {
			out, err := runInGrant(t, gA, w, `mkdir -p objects refs/heads; touch a-started; i=0; while [ ! -e a-go ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; echo A-END`)
			if err != nil {
				out = err.Error()
			}
			aDone <- out
		}()
		waitFile(t, filepath.Join(w, "a-started"))
		gB, err := grant.FromFlags(w, grant.Flags{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(gB.Protected(), filepath.Join(w, "HEAD")) {
			t.Errorf("a session started while another call holds HEAD does not hold it: %v", gB.Protected())
		}
		bDone := make(chan string, 1)
		go func() {
			out, err := runInGrant(t, gB, w, `touch b-started; i=0; while [ ! -e a-done ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
printf 'ref: refs/heads/main\n' > HEAD && echo WROTE; echo B-END`)
			if err != nil {
				out = err.Error()
			}
			bDone <- out
		}()
		waitFile(t, filepath.Join(w, "b-started"))
		if err := os.WriteFile(filepath.Join(w, "a-go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if out := <-aDone; !strings.Contains(out, "A-END") {
			t.Fatalf("call A: %s", out)
		}
		if err := os.WriteFile(filepath.Join(w, "a-done"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		out := <-bDone
		if !strings.Contains(out, "B-END") || strings.Contains(out, "WROTE") {
			t.Errorf("call B wrote HEAD after call A ended:\n%s", out)
		}
		if _, err := hostGit(t, w, "rev-parse", "--git-dir"); err == nil {
			t.Errorf("host git takes %s for a repository", w)
		}
	})

	t.Run("linked worktree redirected", func(t *testing.T) {
		base := newBase(t)
		w, wt, evil := filepath.Join(base, "main"), filepath.Join(base, "wt"), filepath.Join(base, "main", "evil")
		marker := filepath.Join(base, "marker")
		mustGit(t, base, "init", "-q", w)
		mustGit(t, w, "commit", "-q", "--allow-empty", "-m", "first")
		mustGit(t, w, "worktree", "add", "-q", wt)
		mustGit(t, w, "config", "extensions.worktreeConfig", "true")
		admin := filepath.Join(w, ".git", "worktrees", "wt")
		before := snapshot(t, admin)
		// evil is a repository of the sandbox's making inside its tree,
		// for a redirected commondir to name.
		out := run(t, w, `mkdir -p evil/objects evil/refs && printf 'ref: refs/heads/main\n' > evil/HEAD
printf '`+evilConfig(marker)+`' > evil/config
printf '`+evil+`\n' > .git/worktrees/wt/commondir; printf '`+evilConfig(marker)+`' > .git/worktrees/wt/config.worktree
mkdir .git/worktrees/x; rm -rf .git/worktrees/wt; echo tried`)
		if !strings.Contains(out, "tried") {
			t.Fatalf("the script did not run:\n%s", out)
		}
		if after := snapshot(t, admin); after != before {
			t.Errorf("the worktree's administrative directory changed:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		if _, err := os.Lstat(filepath.Join(w, ".git", "worktrees", "x")); err == nil {
			t.Errorf("the sandbox made a worktree directory")
		}
		mustGit(t, wt, "status")
		hostGit(t, wt, "log")
		noMarker(t, marker, out)
	})

	t.Run("hooks directory and included configuration in the tree", func(t *testing.T) {
		base := newBase(t)
		w := filepath.Join(base, "w")
		marker := filepath.Join(base, "marker")
		mustGit(t, base, "init", "-q", w)
		mustGit(t, w, "config", "core.hooksPath", ".githooks")
		mustGit(t, w, "config", "include.path", "../shared.inc")
		if err := os.WriteFile(filepath.Join(w, "shared.inc"), []byte("[user]\n\tname = u\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		mustGit(t, w, "add", "shared.inc")
		mustGit(t, w, "commit", "-q", "-m", "first")
		out := run(t, w, `mkdir -p .githooks; printf '#!/bin/sh\ntouch `+marker+`\n' > .githooks/pre-commit; chmod +x .githooks/pre-commit
printf '[core]\n\tfsmonitor = touch `+marker+`; false\n' >> shared.inc; echo change > f; echo tried`)
		if !strings.Contains(out, "tried") {
			t.Fatalf("the script did not run:\n%s", out)
		}
		if _, err := os.Lstat(filepath.Join(w, ".githooks")); err == nil {
			t.Errorf("the sandbox made the hooks directory core.hooksPath names")
		}
		if b, err := os.ReadFile(filepath.Join(w, "shared.inc")); err != nil || strings.Contains(string(b), "fsmonitor") {
			t.Errorf("the included configuration changed: %q (%v)", b, err)
		}
		mustGit(t, w, "add", "f")
		mustGit(t, w, "commit", "-q", "-m", "second")
		mustGit(t, w, "status")
		noMarker(t, marker, out)
	})

	t.Run("separate git directory in the tree", func(t *testing.T) {
		base := newBase(t)
		w := filepath.Join(base, "w")
		marker := filepath.Join(base, "marker")
		mustGit(t, base, "init", "-q", "--separate-git-dir="+filepath.Join(w, ".repo"), w)
		out := run(t, w, `mkdir -p .repo/hooks; printf '#!/bin/sh\ntouch `+marker+`\n' > .repo/hooks/pre-commit; chmod +x .repo/hooks/pre-commit
printf '[core]\n\tfsmonitor = touch `+marker+`; false\n' >> .repo/config; echo change > f
git add f && git -c user.email=a@b -c user.name=u commit -q -m in-sandbox && echo COMMIT-OK; echo tried`)
		if !strings.Contains(out, "tried") {
			t.Fatalf("the script did not run:\n%s", out)
		}
		if !strings.Contains(out, "COMMIT-OK") {
			t.Errorf("git could not commit in the sandbox:\n%s", out)
		}
		mustGit(t, w, "commit", "-q", "--allow-empty", "-m", "host")
		mustGit(t, w, "status")
		noMarker(t, marker, out)
	})

	t.Run("bare repository granted", func(t *testing.T) {
		base := newBase(t)
		w := filepath.Join(base, "b.git")
		marker := filepath.Join(base, "marker")
		mustGit(t, base, "init", "-q", "--bare", w)
		before := snapshot(t, filepath.Join(w, "hooks")) + snapshot(t, filepath.Join(w, "config"))
		out := run(t, w, `printf '#!/bin/sh\ntouch `+marker+`\n' > hooks/reference-transaction; chmod +x hooks/reference-transaction
printf '`+evilConfig(marker)+`' >> config; mkdir -p modules/x worktrees/x; printf x > commondir; echo tried`)
		if !strings.Contains(out, "tried") {
			t.Fatalf("the script did not run:\n%s", out)
		}
		if after := snapshot(t, filepath.Join(w, "hooks")) + snapshot(t, filepath.Join(w, "config")); after != before {
			t.Errorf("the bare repository's hooks or config changed:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		// (A worktrees directory made where none was is left: git names a
		// new worktree's directory so that it never takes one that exists.)
		for _, n := range []string{"commondir", "modules"} {
			if _, err := os.Lstat(filepath.Join(w, n)); err == nil {
				t.Errorf("the sandbox made %s in the bare repository", n)
			}
		}
		mustGit(t, w, "log", "--oneline", "--all")
		hostGit(t, w, "update-ref", "refs/heads/x", "HEAD")
		noMarker(t, marker, out)
	})
}

// waitFile waits for the sandbox to make p, up to a minute.
func waitFile(t *testing.T, p string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) { //permit:time.Sleep (polling for a file the sandbox makes)
		if _, err := os.Lstat(p); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear", p)
		}
	}
}

// TestHomeTopReadOnly grants a home directory read-write, as `airlock exec`
// run in it does, and checks that nothing new can be made at its top (a
// .bash_aliases that Debian's .bashrc sources, a .nvm a .bashrc sources when
// it exists) and nothing there can be changed (a Python user-site .pth, a
// file at the top), while its existing directories without a leading dot
// stay writable.
func TestHomeTopReadOnly(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home")
	for _, d := range []string{"proj", ".local/share"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, c := range map[string]string{".bashrc": "# rc\n", "notes.txt": "notes\n", "proj/main.go": "package main\n"} {
		if err := os.WriteFile(filepath.Join(home, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	g, err := grant.FromFlags(home, grant.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, filepath.Join(home, ".local"))
	out, err := runInGrant(t, g, home, `for f in .bash_aliases newfile; do echo x > $f && echo "WROTE $f"; done
mkdir .nvm && echo "WROTE .nvm"
mkdir -p .local/lib/python3/site-packages && echo x > .local/lib/python3/site-packages/zz.pth && echo "WROTE pth"
echo x >> .bashrc && echo "WROTE .bashrc"
echo more >> notes.txt && echo "WROTE notes.txt"; echo y > proj/new.go && echo PROJ-OK; echo END`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "END") {
		t.Fatalf("the script did not run:\n%s", out)
	}
	if strings.Contains(out, "WROTE") {
		t.Errorf("the sandbox wrote at the top of the home directory:\n%s", out)
	}
	if !strings.Contains(out, "PROJ-OK") {
		t.Errorf("the home directory's existing directories are not writable:\n%s", out)
	}
	for _, n := range []string{".bash_aliases", "newfile", ".nvm"} {
		if _, err := os.Lstat(filepath.Join(home, n)); err == nil {
			t.Errorf("%s exists on the host", n)
		}
	}
	if after := snapshot(t, filepath.Join(home, ".local")); after != before {
		t.Errorf(".local changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if b, _ := os.ReadFile(filepath.Join(home, "proj", "new.go")); string(b) != "y\n" {
		t.Errorf("proj/new.go holds %q", b)
	}
}

// runInGrant runs the shell script in a sandbox built from g as the broker
// builds one (its mounts, masks and protected paths), in cwd, and returns
// its output. It only reports errors, so a goroutine may call it.
func runInGrant(t testing.TB, g *grant.Grant, cwd, script string) (string, error) {
	var so, se bytes.Buffer
	spec := &sandbox.Spec{Masks: g.Masks(), ReadOnly: g.Protected(), ReadOnlyDirs: g.ProtectedDirs(), Cwd: cwd,
		Env: []string{"PATH=/usr/bin:/bin", "HOME=/tmp"}, Stdout: &so, Stderr: &se,
		Command: []string{"/bin/sh", "-c", script},
		Limits:  sandbox.Limits{Wall: 60 * time.Second, AllowUnenforced: acceptUnenforced}}
	for _, m := range g.Mounts() {
		spec.Mounts = append(spec.Mounts, sandbox.Mount{Source: m.Source, Writable: m.Writable})
	}
	if _, err := backend(t).Run(context.Background(), spec); err != nil {
		return "", err
	}
	return so.String() + se.String(), nil
}
