package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestExecCannotPlantOnPath: a directory of the user's PATH inside the
// granted working directory stays out of a sandbox's reach even when it
// does not exist yet (a bin a build makes later, node_modules/.bin before
// npm install) or PATH names it relative to the directory the user works
// in (tools, ./node_modules/.bin): the user's next command there is looked
// up in it, so a program a sandbox put there would run outside any
// sandbox. The same holds for the directories host programs load code
// from (LD_LIBRARY_PATH, PYTHONPATH, PERL5LIB, ...), and for the files
// they run or load (BASH_ENV, LD_PRELOAD). Only an existing
// directory PATH named by an absolute path was kept read-only; a sandbox
// made the others and wrote git, libc.so.6 or sitecustomize.py into them.
func TestExecCannotPlantOnPath(t *testing.T) {
	airlock, err := exec.LookPath("airlock")
	if err != nil {
		t.Fatalf("the test binary is not on PATH as airlock: %v", err)
	}
	work := t.TempDir()
	for _, d := range []string{"tools", "lib"} {
		if err := os.Mkdir(filepath.Join(work, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The working directory as the user's shell names it (airlock's cwd).
	onPath := []string{
		filepath.Join(work, "bin"), // absolute, missing
		"tools",                    // relative, existing
		"./node_modules/.bin",      // relative, missing with its parent
		filepath.Join(work, "out", "bin"),
	}
	plant := []string{"bin/git", "tools/git", "node_modules/.bin/git", "out/bin/git",
		// Where host programs load code from: every dynamically linked
		// program's libraries, every python's sitecustomize.
		"lib/libc.so.6", "py/sitecustomize.py", "perl/strict.pm",
		// Files host programs run or load: every non-interactive bash's
		// $BASH_ENV, every dynamically linked program's $LD_PRELOAD.
		"hook.sh", "preload.so"}
	var script strings.Builder
	for _, p := range plant {
		script.WriteString("mkdir -p " + filepath.Dir(p) + "; echo evil > " + p + "; ")
	}
	script.WriteString("true")
	cmd := exec.Command(airlock, "exec", "--", "sh", "-c", script.String())
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "AIRLOCK_STATE_DIR="+t.TempDir(),
		"PATH="+strings.Join(onPath, string(os.PathListSeparator))+string(os.PathListSeparator)+os.Getenv("PATH"),
		"LD_LIBRARY_PATH="+filepath.Join(work, "lib"), "PYTHONPATH=py", "PERL5LIB="+filepath.Join(work, "perl"),
		"BASH_ENV=hook.sh", "LD_PRELOAD="+filepath.Join(work, "preload.so"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("airlock exec: %v; output %q", err, out.String())
	}
	for _, p := range plant {
		if _, err := os.Lstat(filepath.Join(work, p)); err == nil {
			t.Errorf("the sandbox wrote %s, a directory on PATH; output %q", p, out.String())
		}
	}
	// The directories held for the call were placeholders, gone with it.
	entries, err := os.ReadDir(work)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "tools" && e.Name() != "lib" {
			t.Errorf("%s left in the working directory", e.Name())
		}
	}
}
