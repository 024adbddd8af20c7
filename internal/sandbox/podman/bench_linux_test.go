package podman

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// BenchmarkCall runs one read_file call per iteration through the Podman
// backend, the native backend and direct execution (the runner without a
// sandbox), in the same run, plus `podman run IMAGE true` with Podman's
// defaults: Podman's own cost, which the backend cannot go below.
func BenchmarkCall(b *testing.B) {
	work := b.TempDir()
	if err := os.WriteFile(filepath.Join(work, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	spec := baseSpec(work)
	args := map[string]any{"path": filepath.Join(work, "a.txt")}
	one := func(b *testing.B, be sandbox.Backend) {
		for b.Loop() {
			out, res := call(b, be, spec, "read_file", args)
			if res.ExitCode != 0 || !strings.Contains(out.Content, "alpha") {
				b.Fatalf("%+v %+v", res, out)
			}
		}
	}
	b.Run("direct", func(b *testing.B) { one(b, sandboxtest.Unsandboxed(b)) })
	b.Run("native", func(b *testing.B) { one(b, sandboxtest.Native(b)) })
	b.Run("podman", func(b *testing.B) { one(b, newLive(b)) })
	b.Run("podman-run-true", func(b *testing.B) {
		needPodman(b)
		for b.Loop() {
			if out, err := exec.Command("podman", "--runtime", "runc", "run", "--rm", "--network", "none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=16384:16384", "--entrypoint", "/bin/true", live.img).CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
	})
}

// TestPodmanPhases logs where a call's time goes: staging the mounts,
// then podman run (container create, runc, the runner) and removal.
func TestPodmanPhases(t *testing.T) {
	needPodman(t)
	var buf strings.Builder
	be, err := New(&Options{Image: live.img, Executable: live.exe, Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	work := t.TempDir()
	for range 3 {
		if _, res := call(t, be, baseSpec(work), "glob", map[string]any{"pattern": "*"}); res.ExitCode != 0 {
			t.Fatalf("%+v", res)
		}
	}
	t.Log(buf.String())
}
