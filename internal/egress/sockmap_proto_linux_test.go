package egress

import (
	"errors"
	"os"
	"testing"
)

// TestProtoLoadKernel loads the verdict program where the process may.
func TestProtoLoadKernel(t *testing.T) {
	if _, err := loadKernel(); err != nil {
		if errors.Is(err, os.ErrPermission) && os.Getenv("AIRLOCK_REQUIRE_FEATURES") == "" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
}
