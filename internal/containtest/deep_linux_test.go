package containtest_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// mkdirDeep makes dir/c1/c2/... one component at a time (each a
// directory, made relative to its parent's fd, as a path longer than
// PATH_MAX cannot be named whole) and returns an fd of the last.
func mkdirDeep(t *testing.T, dir string, comps []string) int {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range comps {
		if err := unix.Mkdirat(fd, c, 0o755); err != nil && err != unix.EEXIST {
			t.Fatalf("mkdir %s: %v", c, err)
		}
		next, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	return fd
}

// TestNativeDeepNestedRepo: a nested repository deep in a read-write
// tree (made by an earlier session's shell, which may create nested
// protected names) is read-only in the next session like any other, and
// the sandbox still starts. 17 components of 250 bytes put its .git past
// PATH_MAX, which the scan once skipped (ENAMETOOLONG, reported complete),
// so a shell walking down one directory at a time could plant a hook;
// 22 short ones made the ancestor pins double the mounts per level, past
// the kernel's mount limit (ENOSPC), so no call of the tree could run; a
// directory named "\xff\xfe" reached the init as "\ufffd\ufffd" (JSON), so
// the init protected a path that did not exist; a newline in a name held.
func TestNativeDeepNestedRepo(t *testing.T) {
	backend := sandboxtest.Native(t)
	for _, tc := range []struct {
		name string
		comp string
		n    int
	}{{"beyond-PATH_MAX", strings.Repeat("d", 250), 17}, {"deep", "d", 22},
		{"invalid-UTF-8", "\xff\xfe", 1}, {"newline", "a\nb", 2}} {
		t.Run(tc.name, func(t *testing.T) { deepNestedRepo(t, backend, tc.comp, tc.n) })
	}
}

func deepNestedRepo(t *testing.T, backend sandbox.Backend, comp string, depth int) {
	w, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	comps := make([]string, depth)
	for i := range comps {
		comps[i] = comp
	}
	fd := mkdirDeep(t, w, append(comps, "repo", ".git", "hooks"))
	unix.Close(fd)
	gitFD := mkdirDeep(t, w, append(comps, "repo", ".git"))
	cfg, err := unix.Openat(gitFD, "config", unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	unix.Write(cfg, []byte("nested\n"))
	unix.Close(cfg)
	unix.Close(gitFD)

	g, err := grant.FromFlags(w, grant.Flags{ReadWrite: []string{w},
		Limits: grant.Limits{Memory: 128 << 20, Processes: 64, Time: time.Minute}, AllowUnenforcedLimits: true})
	if err != nil {
		t.Fatal(err)
	}
	s := sessionsOn(backend)(t, g)
	defer s.Close()
	// dash's cd names the whole path, which is too long: python walks
	// down one relative chdir at a time.
	script := `python3 - <<'EOF'
import os
for _ in range(` + strconv.Itoa(depth) + `):
    os.chdir(bytes.fromhex("` + hex.EncodeToString([]byte(comp)) + `"))
os.chdir("repo/.git")
print("depth", len(os.getcwd()))
for what, f in [("hook", lambda: open("hooks/pre-commit", "w").write("#!/bin/sh\n")),
                ("config", lambda: open("config", "a").write("[core]\n\tfsmonitor = /tmp/x\n")),
                ("swap", lambda: (os.rename("hooks", "hooks.old"), os.mkdir("hooks")))]:
    try:
        f()
        print(what, "rc=0")
    except OSError as e:
        print(what, "failed", e.strerror)
EOF`
	raw, _ := json.Marshal(map[string]any{"command": script, "cwd": w})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := s.Call(ctx, "shell", raw)
	if err != nil {
		t.Fatal(err)
	}
	out := res.Output.Content
	t.Logf("class %s:\n%s", res.Class, out)
	if res.Class != broker.ClassOK || !strings.Contains(out, "depth ") {
		t.Errorf("the shell did not run in the deep tree: class %s", res.Class)
	}
	if strings.Contains(out, "rc=0") {
		t.Errorf("a write to the deep nested repository's .git succeeded:\n%s", out)
	}
	// On the host: no hook, the config unchanged.
	gitFD = mkdirDeep(t, w, append(comps, "repo", ".git"))
	defer unix.Close(gitFD)
	if _, err := unix.Openat(gitFD, "hooks/pre-commit", unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
		t.Errorf("the host's deep .git/hooks/pre-commit exists")
	}
	var st unix.Stat_t
	if err := unix.Fstatat(gitFD, "hooks.old", &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		t.Errorf("the host's deep .git/hooks was renamed")
	}
	cfg, err = unix.Openat(gitFD, "config", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	n, _ := unix.Read(cfg, buf)
	unix.Close(cfg)
	if string(buf[:n]) != "nested\n" {
		t.Errorf("the host's deep .git/config = %q, want it unchanged", buf[:n])
	}
}
