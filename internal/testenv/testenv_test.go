package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestRequireFeature re-runs itself: without AIRLOCK_REQUIRE_FEATURES the
// test is skipped with the reason, with it set to 1 it fails.
func TestRequireFeature(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") == "1" {
		RequireFeature(t, "a feature no host has")
		t.Fatal("RequireFeature returned")
	}
	for _, tc := range []struct {
		require string
		fail    bool
		want    string
	}{
		{"", false, "host lacks a feature: a feature no host has"},
		{"1", true, "required host feature missing: a feature no host has"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRequireFeature$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTENV_CHILD=1", "AIRLOCK_REQUIRE_FEATURES="+tc.require)
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != tc.fail {
			t.Errorf("AIRLOCK_REQUIRE_FEATURES=%q: failed %v, want %v:\n%s", tc.require, failed, tc.fail, out)
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("AIRLOCK_REQUIRE_FEATURES=%q: output lacks %q:\n%s", tc.require, tc.want, out)
		}
	}
}
