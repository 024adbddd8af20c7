// Package testenv holds what tests ask of the host they run on. It imports
// only the standard library, so any package's tests can use it, internal
// tests of the packages the sandbox itself is built from included.
package testenv

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RequireFeature skips the test because the host lacks a feature (reason
// says which, and why), or fails it when AIRLOCK_REQUIRE_FEATURES=1 says
// the host must have every feature (CI sets it).
func RequireFeature(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv("AIRLOCK_REQUIRE_FEATURES") == "1" {
		t.Fatalf("required host feature missing: %s", reason)
	}
	t.Skipf("host lacks a feature: %s", reason)
}

// CopyExecutable copies the file from to a new executable file to (mode
// 0755), failing t on any error: tests copy their own binary where another
// user may run it, or beside a binary under test.
func CopyExecutable(t testing.TB, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// FSSource is the source name of the small file systems tests mount (a
// tmpfs standing for a nearly full disk), as the host's mountinfo shows
// it, so that a count of the host's mounts can leave them out (the soak
// tests' hostMountLines): tests of other packages mount and unmount them
// while it counts.
const FSSource = "airlock-test-fs"

// TypeScriptSDKVersion pins the official TypeScript MCP SDK the tests
// drive airlock with.
const TypeScriptSDKVersion = "1.32.2"

// TypeScriptSDK installs the TypeScript MCP SDK with npm, once per machine
// (cached under $TMPDIR/airlock-npm/VERSION), and returns that directory:
// its node_modules holds @modelcontextprotocol/sdk. A host without node
// or npm lacks a feature (RequireFeature).
func TypeScriptSDK(t testing.TB) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			RequireFeature(t, tool+" is not installed")
		}
	}
	dir := filepath.Join(os.TempDir(), "airlock-npm", TypeScriptSDKVersion)
	marker := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")
	if _, err := os.Stat(marker); err == nil {
		return dir
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("npm", "install", "--prefix", tmp, "--no-audit", "--no-fund", "--loglevel=error",
		"@modelcontextprotocol/sdk@"+TypeScriptSDKVersion)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install @modelcontextprotocol/sdk@%s: %v\n%s", TypeScriptSDKVersion, err, out)
	}
	// Another run may have won the race; either copy is good.
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(marker); serr != nil {
			t.Fatalf("caching the TypeScript SDK: %v", err)
		}
	}
	return dir
}
