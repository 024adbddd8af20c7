// Package testenv holds what tests ask of the host they run on. It imports
// only the standard library, so any package's tests can use it, internal
// tests of the packages the sandbox itself is built from included.
package testenv

import (
	"io"
	"os"
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
