package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	airlock   string
	buildErr  error
)

// TestMain removes the binary built for the benchmarks.
func TestMain(m *testing.M) {
	code := m.Run()
	if airlock != "" {
		os.RemoveAll(filepath.Dir(airlock))
	}
	os.Exit(code)
}

// binary builds the airlock binary once per test process.
func binary(b *testing.B) string {
	b.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "airlock-bench")
		if err != nil {
			buildErr = err
			return
		}
		airlock = filepath.Join(dir, "airlock")
		cmd := exec.Command("go", "build", "-o", airlock, "../cmd/airlock")
		cmd.Stderr = os.Stderr
		buildErr = cmd.Run()
	})
	if buildErr != nil {
		b.Fatalf("building airlock: %v", buildErr)
	}
	return airlock
}

// workspace returns a directory with a 4 KiB file, and the state dir.
func workspace(b *testing.B) (dir, file string) {
	b.Helper()
	dir = b.TempDir()
	file = filepath.Join(dir, "data.txt")
	line := []byte("the quick brown fox jumps over the lazy dog, 0123456789abcdef\n")
	var data []byte
	for len(data) < 4096 {
		data = append(data, line...)
	}
	if err := os.WriteFile(file, data[:4096], 0o644); err != nil {
		b.Fatal(err)
	}
	b.Setenv("AIRLOCK_STATE_DIR", b.TempDir())
	return dir, file
}

// timeCommand runs argv b.N times in dir and reports p50 and p99 latency.
func timeCommand(b *testing.B, dir string, argv ...string) {
	b.Helper()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %v\n%s", argv, err, out)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	report(b, lat)
}

func report(b *testing.B, lat []time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) == 0 {
		return
	}
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds()), "p99-µs")
}

// BenchmarkTrue: a sandboxed /bin/true against direct fork+exec and bwrap.
func BenchmarkTrue(b *testing.B) {
	bin := binary(b)
	dir, _ := workspace(b)
	b.Run("direct", func(b *testing.B) { timeCommand(b, dir, "/bin/true") })
	b.Run("airlock-exec", func(b *testing.B) { timeCommand(b, dir, bin, "exec", "--", "/bin/true") })
	if bwrap, err := exec.LookPath("bwrap"); err == nil {
		b.Run("bwrap", func(b *testing.B) { timeCommand(b, dir, append([]string{bwrap}, BwrapArgs(dir, "/bin/true")...)...) })
	}
}

// BenchmarkReadFile: a read_file tool call (sandboxed and not) against cat.
func BenchmarkReadFile(b *testing.B) {
	bin := binary(b)
	dir, file := workspace(b)
	b.Run("cat", func(b *testing.B) { timeCommand(b, dir, "/bin/cat", file) })
	b.Run("airlock-call-unsandboxed", func(b *testing.B) {
		timeCommand(b, dir, bin, "call", "--unsandboxed", "read_file", `{"path":"data.txt"}`)
	})
	b.Run("airlock-call", func(b *testing.B) {
		timeCommand(b, dir, bin, "call", "read_file", `{"path":"data.txt"}`)
	})
}

// BwrapArgs is a locked-down bubblewrap profile equivalent to airlock's
// default sandbox: new namespaces, read-only system directories, dir
// read-write, a private /tmp, /proc and /dev, no network, a new session.
func BwrapArgs(dir string, cmd ...string) []string {
	args := []string{
		"--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--ro-bind", "/usr", "/usr",
		"--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin",
		"--ro-bind", "/etc/alternatives", "/etc/alternatives",
		"--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache",
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
		"--bind", dir, dir, "--chdir", dir,
		"--hostname", "sandbox",
	}
	return append(args, cmd...)
}
