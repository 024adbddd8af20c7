package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/airlockhq/airlock/internal/sandboxtest"
	"github.com/airlockhq/airlock/internal/wasm/wasmtest"
)

// TestMain lets the test binary serve as the airlock binary: in the scripts
// `airlock` runs Main, and the sandboxes it builds re-execute the test binary
// in the hidden modes.
func TestMain(m *testing.M) {
	sandboxtest.RunHiddenMode()
	testscript.Main(cleanupAfter{m}, map[string]func(){
		"airlock": func() {
			os.Exit(Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
		},
	})
}

// TestScripts drives the CLI as a user would, one txtar script per scenario
// in testdata/script. Run with -update to rewrite the golden parts.
func TestScripts(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       os.Getenv("UPDATE_SCRIPTS") == "1",
		RequireExplicitExec: false,
		Setup: func(e *testscript.Env) error {
			e.Setenv("REPO", repo)
			e.Setenv("AIRLOCK_STATE_DIR", e.WorkDir+"/.state")
			e.Setenv("HOME", e.WorkDir+"/home")
			return nil
		},
	})
}

// cleanupAfter runs the tests, then removes the wasm modules wasmtest built
// for them (testscript.Main exits with the tests' code, so nothing runs
// after it).
type cleanupAfter struct{ m *testing.M }

func (c cleanupAfter) Run() int {
	code := c.m.Run()
	wasmtest.Cleanup()
	return code
}
