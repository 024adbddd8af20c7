package linux_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/wire"
)

// TestPlaceholdersAcrossBrokers: two backends stand for two airlock
// processes (each has its own placeholder count) running sandboxes over one
// tree at once. No sandbox may fail for a placeholder that vanished, none may
// create a protected path that did not exist, and the tree is left as it was.
func TestPlaceholdersAcrossBrokers(t *testing.T) {
	t.Run("made", func(t *testing.T) {
		second, err := linux.New(&linux.Options{Executable: os.Args[0], Cgroups: linux.CgroupsOptional})
		if err != nil {
			t.Fatalf("second backend: %v", err)
		}
		placeholdersAcrossBrokers(t, backend(t), second)
	})
	// Two brokers sharing one state directory, so one placeholder depot
	// (depot_linux.go): each moves placeholders the other put there.
	t.Run("depot", func(t *testing.T) {
		backend(t)
		state := t.TempDir()
		var bs [2]*linux.Backend
		for i := range bs {
			b, err := linux.New(&linux.Options{Executable: os.Args[0], Cgroups: linux.CgroupsOptional, StateDir: state})
			if err != nil {
				t.Fatalf("backend: %v", err)
			}
			t.Cleanup(func() { b.Close() })
			bs[i] = b
		}
		placeholdersAcrossBrokers(t, bs[0], bs[1])
		// (Which placeholders end in the depot depends on which broker
		// released each last: only one an airlock process made goes there,
		// and a broker that found the other's unlinks it.)
	})
}

// placeholdersAcrossBrokers runs sandboxes over one tree on first and
// second at once, each trying to write its protected paths.
func placeholdersAcrossBrokers(t *testing.T, first, second *linux.Backend) {
	d := newDirs(t)
	protected := []string{filepath.Join(d.W, ".bashrc"), filepath.Join(d.W, ".git"), filepath.Join(d.W, ".git/hooks"), filepath.Join(d.W, ".vscode")}
	n := 24
	if testing.Short() {
		n = 8
	}
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			b := first
			if i%2 == 1 {
				b = second
			}
			var so, se bytes.Buffer
			spec := &sandbox.Spec{
				Mounts:   d.mounts(),
				ReadOnly: protected,
				Env:      []string{"PATH=/usr/bin:/bin"},
				Cwd:      d.W,
				Command:  []string{"/bin/sh", "-c", "echo x > .bashrc 2>/dev/null && echo ESCAPED; mkdir .vscode/x 2>/dev/null && echo ESCAPED; touch .git/hooks/pre-commit 2>/dev/null && echo ESCAPED; true"},
				Limits:   sandbox.Limits{Wall: 30 * time.Second, AllowUnenforced: acceptUnenforced},
				Stdout:   &so, Stderr: &se,
			}
			res, err := b.Run(context.Background(), spec)
			switch {
			case err != nil:
				errs <- "run: " + err.Error()
			case res.ExitCode != 0:
				errs <- "exit " + se.String()
			case bytes.Contains(so.Bytes(), []byte("ESCAPED")):
				errs <- "a protected path was created: " + so.String()
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	entries, err := os.ReadDir(d.W)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left in the tree: %s", e.Name())
	}
}

// TestPlaceholderNeverRemovesUserDirectories: an empty directory of the
// user's at a protected name stays after the call.
func TestPlaceholderNeverRemovesUserDirectories(t *testing.T) {
	d := newDirs(t)
	mine := filepath.Join(d.W, ".vscode")
	if err := os.Mkdir(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	o := run(t, &sandbox.Spec{Mounts: d.mounts(), ReadOnly: []string{mine}, Cwd: d.W, Command: []string{"/bin/sh", "-c", "touch .vscode/x 2>&1; true"}})
	if !bytes.Contains([]byte(o.stdout), []byte("Read-only file system")) {
		t.Errorf("the user's .vscode was writable: %q", o.stdout)
	}
	if fi, err := os.Stat(mine); err != nil || !fi.IsDir() {
		t.Fatalf("the user's empty .vscode was removed: %v", err)
	}
}

// fsImmutableFL is FS_IMMUTABLE_FL of linux/fs.h (chattr +i).
const fsImmutableFL = 0x10

// TestPlaceholderFailureAfterClone: a cold sandbox makes its placeholders
// while its init starts; when one cannot be made (here in an immutable
// directory) the run fails naming the path, the init is reaped, its
// cgroup removed, and the placeholders made before the failure are gone.
func TestPlaceholderFailureAfterClone(t *testing.T) {
	d := newDirs(t)
	sub := filepath.Join(d.W, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	setImmutable := func(on bool) error {
		f, err := os.Open(sub)
		if err != nil {
			return err
		}
		defer f.Close()
		flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
		if err != nil {
			return err
		}
		if on {
			flags |= fsImmutableFL
		} else {
			flags &^= fsImmutableFL
		}
		return unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags))
	}
	if err := setImmutable(true); err != nil {
		t.Skipf("cannot make %s immutable here: %v", sub, err)
	}
	defer func() {
		if err := setImmutable(false); err != nil {
			t.Error(err)
		}
	}()
	b := backend(t)
	spec := &sandbox.Spec{
		Mounts:   d.mounts(),
		ReadOnly: []string{filepath.Join(d.W, ".bashrc"), filepath.Join(sub, ".bashrc")},
		Env:      []string{"PATH=/usr/bin:/bin"},
		Command:  []string{"/bin/true"},
		Limits:   sandbox.Limits{Wall: 30 * time.Second, AllowUnenforced: acceptUnenforced},
		Stdout:   io.Discard, Stderr: io.Discard,
	}
	_, err := b.Run(context.Background(), spec)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(sub, ".bashrc")) {
		t.Fatalf("run: %v; want an error naming %s", err, filepath.Join(sub, ".bashrc"))
	}
	if kids := children(t); len(kids) != 0 {
		t.Errorf("processes left: %v", kids)
	}
	if cg := sandboxCgroups(t); len(cg) != 0 {
		t.Errorf("cgroups left: %v", cg)
	}
	entries, err := os.ReadDir(d.W)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "sub" {
			t.Errorf("left in the tree: %s", e.Name())
		}
	}
}

// TestMadeParentReadOnly: a directory the host makes as the parent of a
// protected path (here .git, which the grant's scan took for a repository
// that is gone when the call starts) is made read-only in the sandbox,
// the protected path below it keeping its own mount: nothing can be
// planted in it, and the tree is empty after the call.
func TestMadeParentReadOnly(t *testing.T) {
	d := newDirs(t)
	git := filepath.Join(d.W, ".git")
	protected := []string{filepath.Join(git, "hooks"), filepath.Join(git, "config")}
	o := run(t, &sandbox.Spec{Mounts: d.mounts(), ReadOnly: protected, ReadOnlyDirs: protected[:1], Cwd: d.W,
		Command: []string{"/bin/sh", "-c", "mkdir .git/objects && echo PLANTED; echo x > .git/HEAD && echo PLANTED; touch .git/hooks/pre-commit && echo PLANTED; echo x >> .git/config && echo PLANTED; true"}})
	if strings.Contains(o.stdout, "PLANTED") {
		t.Errorf("something was made in the .git the host made as a parent:\n%s%s", o.stdout, o.stderr)
	}
	if !strings.Contains(o.stdout+o.stderr, "Read-only file system") {
		t.Errorf("want the writes refused as on a read-only file system:\n%s%s", o.stdout, o.stderr)
	}
	entries, err := os.ReadDir(d.W)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left in the tree: %s", e.Name())
	}
}

// TestGitWorksInARepository: in a repository, the placeholder that holds
// the missing .git/commondir holds "." (the repository's own .git), not
// nothing, which git refuses: git works in the sandbox, and the user's git
// on the host works while the call runs; git in the sandbox (with the
// environment broker.BaseEnv sets) does not take the placeholders for new
// files, but does a file the sandbox made; afterwards nothing is left.
func TestGitWorksInARepository(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		testenv.RequireFeature(t, "git, to test that it works in a sandbox")
	}
	d := newDirs(t)
	hostGit := func(args ...string) (string, error) {
		cmd := exec.Command(git, append([]string{"-c", "user.email=a@b", "-c", "user.name=u"}, args...)...)
		cmd.Dir = d.W
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, args := range [][]string{{"init", "-q", "."}, {"commit", "-q", "--allow-empty", "-m", "first"}} {
		if out, err := hostGit(args...); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	g, err := grant.FromFlags(d.W, grant.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	commondir := filepath.Join(d.W, ".git", "commondir")
	if !slices.Contains(g.Protected(), commondir) {
		t.Fatalf("%s is not protected: %v", commondir, g.Protected())
	}
	var so, se bytes.Buffer
	spec := &sandbox.Spec{Mounts: d.mounts(), Masks: g.Masks(), ReadOnly: g.Protected(), ReadOnlyDirs: g.ProtectedDirs(),
		Cwd: d.W, Env: []string{"PATH=/usr/bin:/bin", "HOME=/tmp", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.excludesFile",
			"GIT_CONFIG_VALUE_0=" + wire.PlaceholderExcludes}, Stdout: &so, Stderr: &se,
		Command: []string{"/bin/sh", "-c", `git status --porcelain >/dev/null && echo IN-OK; echo x > started
i=0; while [ ! -e go-on ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
rm -f started go-on; echo new > new.txt; git status --porcelain --untracked-files=all | sed 's/^/STATUS /'
git add -A && git -c user.email=a@b -c user.name=u commit -q -m second && echo COMMIT-OK; echo x > .git/commondir || true`},
		Limits: sandbox.Limits{Wall: 60 * time.Second, AllowUnenforced: acceptUnenforced}}
	done := make(chan error, 1)
	go func() {
		_, err := backend(t).Run(context.Background(), spec)
		done <- err
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(d.W, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sandbox did not start its git: %s%s", so.String(), se.String())
		}
	}
	if b, err := os.ReadFile(commondir); err != nil || string(b) != ".\n" {
		t.Errorf("the commondir placeholder holds %q (%v), want \".\\n\"", b, err)
	}
	if out, err := hostGit("status", "--porcelain"); err != nil {
		t.Errorf("the host's git while a call runs: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(d.W, "go-on"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(so.String(), "IN-OK") || !strings.Contains(so.String(), "COMMIT-OK") {
		t.Errorf("git in the sandbox failed:\n%s%s", so.String(), se.String())
	}
	if _, err := os.Lstat(commondir); err == nil {
		t.Errorf("%s is left after the call", commondir)
	}
	if out, err := hostGit("log", "--oneline"); err != nil || strings.Count(out, "\n") != 2 {
		t.Errorf("git log after the call: %v\n%s", err, out)
	}
	if !strings.Contains(so.String(), "STATUS ?? new.txt") || strings.Count(so.String(), "STATUS ") != 1 {
		t.Errorf("git status in the sandbox, want only new.txt new:\n%s", so.String())
	}
	if out, err := hostGit("show", "--name-only", "--format=", "HEAD"); err != nil || out != "new.txt\n" {
		t.Errorf("the sandbox's commit holds %q (%v), want only new.txt", out, err)
	}
}
