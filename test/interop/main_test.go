package interop_test

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain removes the airlock binary the tests built (airlock) when they
// are done.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}
