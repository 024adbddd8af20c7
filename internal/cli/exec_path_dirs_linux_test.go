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
// sandbox. Only an existing directory named by an absolute path was kept
// read-only; a sandbox made the others and wrote git into them.
func TestExecCannotPlantOnPath(t *testing.T) {
	airlock, err := exec.LookPath("airlock")
	if err != nil {
		t.Fatalf("the test binary is not on PATH as airlock: %v", err)
	}
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The working directory as the user's shell names it (airlock's cwd).
	onPath := []string{
		filepath.Join(work, "bin"), // absolute, missing
		"tools",                    // relative, existing
		"./node_modules/.bin",      // relative, missing with its parent
		filepath.Join(work, "out", "bin"),
	}
	plant := []string{"bin/git", "tools/git", "node_modules/.bin/git", "out/bin/git"}
	var script strings.Builder
	for _, p := range plant {
		script.WriteString("mkdir -p " + filepath.Dir(p) + "; echo evil > " + p + "; ")
	}
	script.WriteString("true")
	cmd := exec.Command(airlock, "exec", "--", "sh", "-c", script.String())
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "AIRLOCK_STATE_DIR="+t.TempDir(),
		"PATH="+strings.Join(onPath, string(os.PathListSeparator))+string(os.PathListSeparator)+os.Getenv("PATH"))
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
		if e.Name() != "tools" {
			t.Errorf("%s left in the working directory", e.Name())
		}
	}
}
