// Package testenv holds what tests ask of the host they run on. It imports
// only the standard library, so any package's tests can use it, internal
// tests of the packages the sandbox itself is built from included.
package testenv

import (
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
