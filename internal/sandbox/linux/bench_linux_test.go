package linux_test

import (
	"context"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// BenchmarkRunTrue runs /bin/true in a fresh sandbox per iteration.
func BenchmarkRunTrue(b *testing.B) {
	be := backend(b)
	spec := &sandbox.Spec{Command: []string{"/bin/true"}, Env: []string{"PATH=/usr/bin:/bin"}, Limits: sandbox.Limits{AllowUnenforced: acceptUnenforced}}
	for b.Loop() {
		res, err := be.Run(context.Background(), spec)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%v %+v", err, res)
		}
	}
}

// BenchmarkDirectTrue runs /bin/true with os/exec, the baseline.
func BenchmarkDirectTrue(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSetupPhases logs where setup time goes (clone, cgroup placement,
// and each phase inside the init), for the benchmark report.
func TestSetupPhases(t *testing.T) {
	var buf strings.Builder
	be, err := linux.New(&linux.Options{Executable: os.Args[0], Cgroups: linux.CgroupsOptional,
		Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	spec := &sandbox.Spec{Command: []string{"/bin/true"}, Env: []string{"PATH=/usr/bin:/bin"}, Limits: sandbox.Limits{AllowUnenforced: acceptUnenforced}}
	for range 5 {
		if _, err := be.Run(context.Background(), spec); err != nil {
			t.Fatal(err)
		}
	}
	t.Log(buf.String())
}

// BenchmarkBwrapTrue runs /bin/true under bubblewrap with a comparable
// layout, when bwrap is installed, so the three ratios come from one run.
func BenchmarkBwrapTrue(b *testing.B) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("bwrap not installed (a peer for comparison, not a feature)")
	}
	args := []string{"--unshare-all", "--die-with-parent", "--new-session",
		"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
		"--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin",
		"--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache",
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--cap-drop", "ALL", "/bin/true"}
	for b.Loop() {
		if err := exec.Command(bwrap, args...).Run(); err != nil {
			b.Fatal(err)
		}
	}
}
