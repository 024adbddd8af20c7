package cli

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// readmeCommand says how TestREADMECommands runs one command of the
// README: in which directory of the scratch workspace, with which exit
// status and output, or why it is not run.
type readmeCommand struct {
	dir    string // "repo" (a tree of links to this module) or "proj" (a small project)
	fail   bool   // the command is expected to exit non-zero
	stdout string // a regexp its stdout must match
	skip   string // why it is not run
}

// readmeCommands lists every command of the README's sh blocks. A command
// added to the README and not here fails the test, so none goes untested
// by accident.
var readmeCommands = map[string]readmeCommand{
	`go build -o airlock ./cmd/airlock && ./airlock call shell '{"command": "echo hello from $(hostname); ls /"}'`:                      {dir: "repo", stdout: `(?m)^hello from airlock$`},
	`go install ./cmd/airlock && CGO_ENABLED=0 go install ./cmd/airlock-init   # into $(go env GOPATH)/bin (or $GOBIN): put it on PATH`: {dir: "repo"},
	`go test ./...`: {skip: "the test suite itself"},
	`airlock call read_file '{"path": "README.md"}'`:                                                   {dir: "proj", stdout: `a scratch project`},
	`airlock call grep '{"pattern": "func main", "output_mode": "content"}'`:                           {dir: "proj", stdout: `main.go:3:func main`},
	`airlock exec -- make test`:                                                                        {dir: "proj", stdout: `(?m)^make test ran$`},
	`airlock exec --ro "$(go env GOMODCACHE)" --time 10m --memory 2GiB -- go test ./...`:               {dir: "proj", stdout: `(?m)^ok\s+example.com/proj`},
	`airlock check examples/grant.toml write_file '{"path": ".git/hooks/pre-commit", "content": "x"}'`: {dir: "proj", fail: true, stdout: `decision: REFUSED`},
	`airlock tools --format anthropic   # or mcp, openai (Chat Completions), openai-responses`:         {dir: "proj", stdout: `"input_schema"`},
	`airlock log`:                      {dir: "proj", stdout: `(?m)^TIME +SESSION`},
	`airlock log --since 1h --tail 20`: {dir: "proj", stdout: `read_file`},
	`airlock doctor`:                   {dir: "proj"},
	`claude mcp add airlock -- airlock mcp --grant ~/grants/project.toml`: {skip: "needs Claude Code"},
	`airlock mcp --grant grant.toml`:                                      {dir: "proj"}, // stdin is empty: it serves until EOF
	`airlock run ./examples/capsule-agent -- TODO`:                        {skip: "the example's module is built by examples/capsule-agent/build.sh; TestRunExampleCapsule builds and runs it"},
}

// readmeShellCommands returns the command lines of the ```sh blocks of the
// markdown file: every line that is not blank or a comment.
func readmeShellCommands(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```sh"):
			in = true
		case strings.HasPrefix(line, "```"):
			in = false
		case in && strings.TrimSpace(line) != "" && !strings.HasPrefix(strings.TrimSpace(line), "#"):
			out = append(out, strings.TrimSpace(line))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestREADMECommands runs every command of the README's sh blocks as
// written (with sh -c, airlock on PATH), in order, offline: the quick start
// in a tree of links to this module, the rest in a small project with the
// files they name. Go's caches are the host's, so nothing is fetched.
func TestREADMECommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds airlock and runs go test in a sandbox")
	}
	sandboxtest.Native(t) // the commands run calls: skip, with the reason, where none can
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmds := readmeShellCommands(t, filepath.Join(repo, "README.md"))
	if len(cmds) < 10 {
		t.Fatalf("found only %d commands in README.md's sh blocks: %q", len(cmds), cmds)
	}
	goEnv := map[string]string{}
	for _, k := range []string{"GOMODCACHE", "GOCACHE", "GOPATH", "GOROOT"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Skipf("no go command here: %v", err)
		}
		goEnv[k] = strings.TrimSpace(string(out))
	}

	var script strings.Builder
	seen := map[string]bool{}
	for _, c := range cmds {
		seen[c] = true
		rc, ok := readmeCommands[c]
		if !ok {
			t.Errorf("README.md runs %q, which TestREADMECommands does not know: add it to readmeCommands", c)
			continue
		}
		if rc.skip != "" {
			continue
		}
		script.WriteString("cd $WORK/" + rc.dir + "\n")
		if rc.fail {
			script.WriteString("! ")
		}
		script.WriteString("exec sh -c '" + strings.ReplaceAll(c, "'", "''") + "'\n")
		if rc.stdout != "" {
			script.WriteString("stdout '" + strings.ReplaceAll(rc.stdout, "'", "''") + "'\n")
		}
	}
	for c := range readmeCommands {
		if !seen[c] {
			t.Errorf("readmeCommands lists %q, which README.md no longer has", c)
		}
	}
	if t.Failed() {
		return
	}
	grantFile, err := os.ReadFile(filepath.Join(repo, "examples", "grant.toml"))
	if err != nil {
		t.Fatal(err)
	}
	script.WriteString(`
-- proj/README.md --
# a scratch project
-- proj/main.go --
package main

func main() {}
-- proj/main_test.go --
package main

import "testing"

func TestMain(t *testing.T) {}
-- proj/go.mod --
module example.com/proj

go 1.22
-- proj/Makefile --
test:
	@echo make test ran
-- proj/grant.toml --
[paths]
read_write = ["."]
-- proj/examples/grant.toml --
` + string(grantFile))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "readme.txtar"), []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: dir,
		Setup: func(e *testscript.Env) error {
			e.Setenv("AIRLOCK_STATE_DIR", e.WorkDir+"/.state")
			e.Setenv("HOME", e.WorkDir+"/home")
			for k, v := range goEnv {
				e.Setenv(k, v)
			}
			e.Setenv("GOBIN", e.WorkDir+"/gobin")
			e.Setenv("GOFLAGS", "-mod=mod")
			e.Setenv("GOPROXY", "off") // offline: everything is in the module cache
			e.Setenv("GOTOOLCHAIN", "local")
			// The quick start builds in a tree of links to this module,
			// so nothing is written into the module itself.
			tree := filepath.Join(e.WorkDir, "repo")
			if err := os.MkdirAll(tree, 0o755); err != nil {
				return err
			}
			entries, err := os.ReadDir(repo)
			if err != nil {
				return err
			}
			for _, en := range entries {
				if n := en.Name(); n == "airlock" || strings.HasPrefix(n, ".") {
					continue
				}
				if err := os.Symlink(filepath.Join(repo, en.Name()), filepath.Join(tree, en.Name())); err != nil {
					return err
				}
			}
			return nil
		},
	})
}
