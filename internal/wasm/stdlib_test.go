package wasm

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/wasm/wasmtest"
)

// stdlibSkips are the standard library tests that cannot pass under
// airlock's wasm runtime, each with the reason. Everything else in the
// packages runs and must pass.
var stdlibSkips = map[string][]struct{ test, why string }{
	"os": {
		{"TestFileChdir", "chdir to /: the capsule's world has no root directory, only its preopens"},
		{"TestChdirAndGetwd", "EvalSymlinks lstats /tmp, the parent of the granted TMPDIR, which is not granted"},
		{"TestOpenFileDevNull", "opens /dev/null: no /dev is granted (a preopen is a directory the grant names)"},
		{"TestDevNullFile", "opens /dev/null: no /dev is granted"},
		{"TestRootRenameAfterOpen", "wazero keeps a directory opened below a preopen as its path, not a descriptor, so renaming its parent loses it (as with wazero's own DirFS)"},
	},
	"io/fs": {},
	"path/filepath": {
		{"TestIssue29372", "EvalSymlinks lstats /tmp, the parent of the granted TMPDIR, which is not granted"},
	},
}

// TestStdlib runs the Go standard library's own tests of os, io/fs and
// path/filepath, compiled for wasip1 by the local toolchain, under this
// runtime: the package's source directory granted read-only (the tests
// read their testdata) and a temporary directory read-write as TMPDIR. A
// suite nobody here wrote, so the preopens behave as WASI programs expect.
// Set AIRLOCK_STDLIB_TESTS=0 to skip it (it compiles three test binaries,
// about a minute on a cold build cache).
func TestStdlib(t *testing.T) {
	if os.Getenv("AIRLOCK_STDLIB_TESTS") == "0" {
		t.Skip("AIRLOCK_STDLIB_TESTS=0")
	}
	if testing.Short() {
		t.Skip("-short: the standard library suite compiles three test binaries")
	}
	goroot, err := filepath.EvalSymlinks(wasmtest.GOROOT(t)) // a preopen is opened through no symlink
	if err != nil {
		t.Fatal(err)
	}
	pkgs := []string{"os", "io/fs", "path/filepath"}
	if p := os.Getenv("AIRLOCK_STDLIB_PKGS"); p != "" {
		pkgs = strings.Fields(p)
	}
	for _, pkg := range pkgs {
		t.Run(pkg, func(t *testing.T) {
			t.Parallel()
			src := filepath.Join(goroot, "src", filepath.FromSlash(pkg))
			bin := filepath.Join(t.TempDir(), "pkg.test.wasm")
			cmd := exec.Command(wasmtest.GoTool(), "test", "-c", "-o", bin, pkg)
			cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("go test -c %s for wasip1: %v\n%s", pkg, err, out)
			}
			b, err := os.ReadFile(bin)
			if err != nil {
				t.Fatal(err)
			}
			m := compile(t, b)
			tmp := tempDir(t)
			args := []string{"pkg.test", "-test.short", "-test.v"}
			var skips []string
			for _, s := range stdlibSkips[pkg] {
				skips = append(skips, "^"+s.test+"$")
			}
			if len(skips) > 0 {
				args = append(args, "-test.skip", strings.Join(skips, "|"))
			}
			var out bytes.Buffer
			o, err := testEngine(t).Run(context.Background(), m, &Config{
				Args: args,
				Env:  []string{"PWD=" + src, "TMPDIR=" + tmp, "HOME=" + tmp, "GOROOT=" + goroot},
				Dirs: []Dir{
					{Host: goroot, Guest: filepath.ToSlash(goroot), ReadOnly: true},
					{Host: tmp, Guest: filepath.ToSlash(tmp)},
				},
				Stdout: &out, Stderr: &out,
				Time: 5 * time.Minute,
			})
			if err != nil {
				t.Fatal(err)
			}
			if log := os.Getenv("AIRLOCK_STDLIB_LOG"); log != "" {
				_ = os.WriteFile(log+"."+strings.ReplaceAll(pkg, "/", "_"), out.Bytes(), 0o644)
			}
			var failed []string
			for _, l := range strings.Split(out.String(), "\n") {
				if strings.HasPrefix(strings.TrimSpace(l), "--- FAIL") {
					failed = append(failed, strings.TrimSpace(l))
				}
			}
			if o.ExitCode != 0 || o.Trap != "" || len(o.LimitsHit) > 0 {
				t.Errorf("%s tests: exit %d, trap %q, limits %v; failed:\n%s\n\nlast output:\n%s", pkg, o.ExitCode, o.Trap, o.LimitsHit, strings.Join(failed, "\n"), tail(out.String(), 4000))
			}
			t.Logf("%s: %d tests passed", pkg, strings.Count(out.String(), "--- PASS"))
		})
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
