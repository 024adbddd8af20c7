package containtest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/containtest"
	"github.com/airlockhq/airlock/internal/native"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

func TestMain(m *testing.M) { sandboxtest.Main(m) }

// sessionsOn opens the suite's broker sessions on backend.
func sessionsOn(backend sandbox.Backend) containtest.Open {
	return func(t *testing.T, g *grant.Grant) *broker.Session {
		s, err := broker.Open(&broker.Options{Grant: g, Backend: backend, RecordsDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// TestNative runs the containment suite against the native Linux sandbox.
func TestNative(t *testing.T) {
	backend := sandboxtest.Native(t)
	containtest.Run(t, sessionsOn(backend), nil)
}

// TestNativeSeparateInit runs the containment suite against the native
// sandbox with the separately built init (cmd/airlock-init, without cgo:
// locked down by the spawner before its exec) as every
// sandbox's init, as airlock runs it when both are installed from one
// build: a second init binary must contain exactly what the first does.
func TestNativeSeparateInit(t *testing.T) {
	sandboxtest.Native(t) // skips where the host has no native sandbox
	exe := filepath.Join(t.TempDir(), "airlock-init")
	build := exec.Command("go", "build", "-o", exe, "github.com/airlockhq/airlock/cmd/airlock-init")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as the README installs it
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building airlock-init: %v\n%s", err, out)
	}
	backend, err := native.New(&native.Options{Executable: exe, OptionalCgroups: os.Geteuid() != 0})
	if err != nil {
		t.Fatal(err)
	}
	containtest.Run(t, sessionsOn(backend), &containtest.Options{Binaries: []string{exe}})
}
