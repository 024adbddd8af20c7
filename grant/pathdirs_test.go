package grant

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestPathDirsInWritableTreeStayReadOnly: a directory on the user's PATH
// inside a read-write tree (a project's activated .venv/bin, a
// direnv-added bin) is where the user's next command is looked up: a
// program the sandbox puts there (git, ls, airlock itself) runs in place
// of the real one, outside any sandbox, the next time the user or an MCP
// client starts it. So it stays read-only like a protected path, with no
// opt-out, and a read-write grant of a PATH directory itself is refused.
func TestPathDirsInWritableTreeStayReadOnly(t *testing.T) {
	T := fixture(t, "ws/.venv/bin/python", "ws/src/main.go", "bin/tool")
	t.Setenv("PATH", strings.Join([]string{T + "/ws/.venv/bin", T + "/bin", "/usr/bin", "/bin"}, string(os.PathListSeparator)))
	g := mustParse(t, T, "[paths]\nread_write = [\"ws\"]\n")
	for _, p := range []string{T + "/ws/.venv/bin/git", T + "/ws/.venv/bin/python", T + "/ws/.venv/bin/airlock"} {
		d := g.CheckPath(p, true)
		if d.Allowed {
			t.Errorf("writing %s allowed: its directory is on PATH", p)
			continue
		}
		if !strings.Contains(d.Reason, "PATH") || strings.Contains(d.Reason, "writable_protected can allow") {
			t.Errorf("writing %s: reason %q, want it to name PATH and no opt-out", p, d.Reason)
		}
	}
	if !slices.Contains(g.Protected(), T+"/ws/.venv/bin") || !slices.Contains(g.ProtectedDirs(), T+"/ws/.venv/bin") {
		t.Errorf("%s/ws/.venv/bin is not mounted read-only: protected %v", T, g.Protected())
	}
	if d := g.CheckPath(T+"/ws/src/main.go", true); !d.Allowed {
		t.Errorf("writing the project's own file refused: %s", d.Reason)
	}
	if d := g.CheckPath(T+"/ws/.venv/bin/python", false); !d.Allowed {
		t.Errorf("reading a PATH directory's program refused: %s", d.Reason)
	}
	_, err := Parse([]byte("[paths]\nread_write = [\"bin\"]\n"), "grant.toml", T)
	if err == nil || !strings.Contains(err.Error(), "on PATH") {
		t.Errorf("a read-write grant of the PATH directory %s/bin: err %v, want a refusal naming PATH", T, err)
	}
	mustParse(t, T, "[paths]\nread_only = [\"bin\"]\n")
}

// TestOwnFileRefusalOffersNoOptOut: a write to one of airlock's own files
// kept read-only in a read-write tree (Guard: the grant file, the binary)
// is refused with a reason that does not send the user to
// paths.writable_protected, which cannot open it.
func TestOwnFileRefusalOffersNoOptOut(t *testing.T) {
	T := fixture(t, "ws/grant.toml")
	g := mustParse(t, T, "[paths]\nread_write = [\"ws\"]\n")
	gg, err := g.Guard(nil, []string{T + "/ws/grant.toml"})
	if err != nil {
		t.Fatal(err)
	}
	d := gg.CheckPath(T+"/ws/grant.toml", true)
	if d.Allowed {
		t.Fatal("writing the grant file allowed")
	}
	if strings.Contains(d.Reason, "writable_protected") || !strings.Contains(d.Reason, "airlock's own") {
		t.Errorf("reason %q: want it to say the file is airlock's own, with no paths.writable_protected opt-out", d.Reason)
	}
}

// TestPathDirsMissingOrRelative: a PATH directory that does not exist yet
// (a bin a build makes later) and one PATH names relative to the working
// directory (tools, ./node_modules/.bin) are held read-only in a
// read-write tree like any other: a sandbox that made or wrote one would
// choose the user's next command there. "." and "" name the working
// directory itself and are left out.
func TestPathDirsMissingOrRelative(t *testing.T) {
	T := fixture(t, "ws/tools/x", "ws/src/main.go")
	t.Chdir(T + "/ws")
	t.Setenv("PATH", strings.Join([]string{T + "/ws/bin", "tools", "./node_modules/.bin", ".", "", "/usr/bin"}, string(os.PathListSeparator)))
	g := mustParse(t, T, "[paths]\nread_write = [\"ws\"]\n")
	for _, p := range []string{T + "/ws/bin/git", T + "/ws/tools/git", T + "/ws/node_modules/.bin/git"} {
		if d := g.CheckPath(p, true); d.Allowed || !strings.Contains(d.Reason, "PATH") {
			t.Errorf("writing %s: allowed %v (%s), want a refusal naming PATH", p, d.Allowed, d.Reason)
		}
	}
	for _, dir := range []string{T + "/ws/bin", T + "/ws/tools", T + "/ws/node_modules/.bin"} {
		if !slices.Contains(g.ProtectedDirs(), dir) {
			t.Errorf("%s is not held as a read-only directory: protected dirs %v", dir, g.ProtectedDirs())
		}
	}
	if d := g.CheckPath(T+"/ws/src/main.go", true); !d.Allowed {
		t.Errorf("writing the project's own file refused: %s", d.Reason)
	}
	if d := g.CheckPath(T+"/ws/new.go", true); !d.Allowed {
		t.Errorf("writing a new file at the top of the tree refused (\".\" is on PATH, but left out): %s", d.Reason)
	}
}

// TestLibraryPathsStayReadOnly: the directories host programs load code
// from (LD_LIBRARY_PATH, PYTHONPATH, ...) inside a read-write tree stay
// read-only as PATH's do, and a read-write grant of one is refused.
func TestLibraryPathsStayReadOnly(t *testing.T) {
	T := fixture(t, "ws/lib/x", "ws/src/main.go", "libs/y")
	t.Chdir(T + "/ws")
	t.Setenv("LD_LIBRARY_PATH", T+"/ws/lib")
	t.Setenv("PYTHONPATH", "py")
	g := mustParse(t, T, "[paths]\nread_write = [\"ws\"]\n")
	for p, v := range map[string]string{T + "/ws/lib/libc.so.6": "LD_LIBRARY_PATH", T + "/ws/py/sitecustomize.py": "PYTHONPATH"} {
		if d := g.CheckPath(p, true); d.Allowed || !strings.Contains(d.Reason, v) {
			t.Errorf("writing %s: allowed %v (%s), want a refusal naming %s", p, d.Allowed, d.Reason, v)
		}
	}
	t.Setenv("LD_LIBRARY_PATH", T+"/libs")
	_, err := Parse([]byte("[paths]\nread_write = [\"libs\"]\n"), "grant.toml", T)
	if err == nil || !strings.Contains(err.Error(), "on LD_LIBRARY_PATH") {
		t.Errorf("a read-write grant of the LD_LIBRARY_PATH directory %s/libs: err %v, want a refusal naming it", T, err)
	}
}

// TestEnvNamedFilesStayReadOnly: a file the broker's environment names
// for host programs to run or load (BASH_ENV, LD_PRELOAD by path), inside
// a read-write tree and whether or not it exists yet, stays read-only; a
// bare LD_PRELOAD name, looked up in the library directories, names no
// file here.
func TestEnvNamedFilesStayReadOnly(t *testing.T) {
	T := fixture(t, "ws/src/main.go", "ws/pre.so")
	t.Chdir(T + "/ws")
	t.Setenv("BASH_ENV", "hook.sh")
	t.Setenv("LD_PRELOAD", T+"/ws/pre.so libfoo.so")
	g := mustParse(t, T, "[paths]\nread_write = [\"ws\"]\n")
	for p, v := range map[string]string{T + "/ws/hook.sh": "BASH_ENV", T + "/ws/pre.so": "LD_PRELOAD"} {
		if d := g.CheckPath(p, true); d.Allowed || !strings.Contains(d.Reason, v) {
			t.Errorf("writing %s: allowed %v (%s), want a refusal naming %s", p, d.Allowed, d.Reason, v)
		}
	}
	if d := g.CheckPath(T+"/ws/libfoo.so", true); !d.Allowed {
		t.Errorf("writing libfoo.so, a bare LD_PRELOAD name, refused: %s", d.Reason)
	}
}
