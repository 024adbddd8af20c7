// Package sandboxtest lets a package's test binary serve as the airlock
// binary, so tests run real calls through the real sandbox: call Main from
// TestMain, then use Native or Unsandboxed for a backend whose sandboxes
// re-execute the test binary in airlock's hidden modes.
package sandboxtest

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/airlockhq/airlock/internal/native"
	"github.com/airlockhq/airlock/internal/runner"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/direct"
	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/wire"
)

// Main runs the hidden runner or sandbox mode when the test binary was started
// in one, and the tests otherwise. Call it from TestMain.
func Main(m *testing.M) {
	RunHiddenMode()
	os.Exit(m.Run())
}

var (
	nativeOnce sync.Once
	nativeVal  sandbox.Backend
	nativeErr  error
)

// Native returns the platform's sandbox backend running the test binary,
// shared by the package's tests. It skips (or fails, see testenv.RequireFeature) when
// the host cannot sandbox, or cannot enforce every limit for this user (an
// unprivileged run without a delegated cgroup, where the backend refuses
// calls with memory and process limits, as every grant has).
func Native(t testing.TB) sandbox.Backend {
	t.Helper()
	nativeOnce.Do(func() { nativeVal, nativeErr = newNative() })
	if nativeErr != nil {
		var mf *sandbox.MissingFeatureError
		if errors.As(nativeErr, &mf) || errors.Is(nativeErr, sandbox.ErrUnsupported) {
			testenv.RequireFeature(t, nativeErr.Error())
		}
		t.Fatalf("starting the native backend: %v", nativeErr)
	}
	if u := nativeVal.Report().Unenforced(); len(u) > 0 {
		testenv.RequireFeature(t, fmt.Sprintf("the native backend cannot enforce the %s limits for uid %d (no cgroup it may manage; see airlock doctor)", wire.JoinLimits(u, " and "), os.Getuid()))
	}
	return nativeVal
}

// Unsandboxed returns the unsandboxed backend running the test binary.
func Unsandboxed(t testing.TB) sandbox.Backend {
	t.Helper()
	b, err := direct.New(&direct.Options{Executable: os.Args[0], Args: []string{runner.Mode}})
	if err != nil {
		t.Fatalf("direct.New: %v", err)
	}
	return b
}

// RunHiddenMode runs the hidden runner or sandbox mode and exits when the
// test binary was started in one, and returns otherwise. Use it from a
// TestMain that hands the rest to another harness (testscript).
func RunHiddenMode() { native.RunHiddenMode() }

// New returns a new native backend running the test binary, for a test
// binary re-run as a helper process (a tool-server), where no testing.TB
// exists. It returns sandbox.ErrUnsupported where there is none.
func New() (sandbox.Backend, error) { return newNative() }

// newNative is the native backend over the test binary; an unprivileged
// run may lack a cgroup, which Native then reports.
func newNative() (sandbox.Backend, error) {
	return native.New(&native.Options{Executable: os.Args[0], OptionalCgroups: os.Geteuid() != 0})
}
