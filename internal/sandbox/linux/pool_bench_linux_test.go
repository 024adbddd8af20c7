package linux_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
	"github.com/airlockhq/airlock/wire"
)

// benchFile writes the 4 KiB file the read benchmarks read.
func benchFile(b *testing.B) (dirs, string) {
	b.Helper()
	d := newDirs(b)
	p := filepath.Join(d.R, "four-k.txt")
	if err := os.WriteFile(p, bytes.Repeat([]byte("airlock\n"), 512), 0o644); err != nil {
		b.Fatal(err)
	}
	return d, p
}

// toolFrame is the runner input for one call of a real tool.
func toolFrame(b *testing.B, name string, args any, cwd string) string {
	return toolFrameT(b, name, args, cwd)
}

func toolFrameT(b testing.TB, name string, args any, cwd string) string {
	b.Helper()
	a, err := json.Marshal(args)
	if err != nil {
		b.Fatal(err)
	}
	in, err := json.Marshal(wire.ToolInput{Tool: name, Args: a, Context: wire.CallContext{
		CallID: "call_bench", Session: "ses_bench", Root: "/", Cwd: cwd,
		Limits: wire.ToolLimits{OutputBytes: 64 << 10, FileBytes: 1 << 20, TimeoutMS: 30000},
	}})
	if err != nil {
		b.Fatal(err)
	}
	var f bytes.Buffer
	if err := wire.WriteFrame(&f, in); err != nil {
		b.Fatal(err)
	}
	return "runner:" + f.String()
}

// reportP50 reports the median of ds as p50-ns.
func reportP50(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds()), "p50-ns")
}

// benchCall times Run of spec with input on be; with warmOnly set, each
// timed call starts with the pool full (it refills untimed, as it does
// between an agent's calls).
func benchCall(b *testing.B, be *linux.Backend, spec *sandbox.Spec, input, want string, warmOnly bool) {
	ds := make([]time.Duration, 0, b.N)
	warm, readyMax := 0, 0
	if err := be.Prewarm(spec); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		if warmOnly {
			b.StopTimer()
			waitWarm(b, be, spec, 2)
			b.StartTimer()
		}
		s := *spec
		var so, se bytes.Buffer
		s.Stdin, s.Stdout, s.Stderr = strings.NewReader(input), &so, &se
		t := time.Now()
		res, err := be.Run(context.Background(), &s)
		ds = append(ds, time.Since(t))
		if err != nil || res.ExitCode != 0 || !strings.Contains(so.String(), want) {
			b.Fatalf("Run: %v %+v stdout %q stderr %q", err, res, so.String(), se.String())
		}
		isWarm := slices.Contains(res.Isolation.Features, "warm")
		if warmOnly && !isWarm {
			b.Fatalf("call %d was not warm", i)
		}
		if isWarm {
			warm++
		}
		readyMax = max(readyMax, be.Warm(spec))
	}
	b.StopTimer()
	reportP50(b, ds)
	slices.Sort(ds)
	b.ReportMetric(float64(ds[min(len(ds)-1, len(ds)*99/100)].Nanoseconds()), "p99-ns")
	// Back to back, how many calls found a warm sandbox, and the most the
	// pool held ready (it grows when calls outrun it).
	b.ReportMetric(100*float64(warm)/float64(b.N), "warm-%")
	b.ReportMetric(float64(readyMax), "ready-max")
	// The claims' hold (the placeholders made on the call's clock), from
	// the backend's debug log.
	if l, ok := poolLogs.Load(be); ok {
		var holds []time.Duration
		for _, m := range regexp.MustCompile(`msg="sandbox claimed".* hold_ns=(\d+)`).FindAllStringSubmatch(l.(*linux.SyncBuffer).String(), -1) {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			holds = append(holds, time.Duration(n))
		}
		if len(holds) > 0 {
			slices.Sort(holds)
			b.ReportMetric(float64(holds[len(holds)/2].Nanoseconds()), "hold-p50-ns")
		}
	}
}

// BenchmarkCatDirect is the baseline: fork+exec of cat on the 4 KiB file,
// unsandboxed, output collected.
func BenchmarkCatDirect(b *testing.B) {
	_, p := benchFile(b)
	ds := make([]time.Duration, 0, b.N)
	for i := 0; i < b.N; i++ {
		t := time.Now()
		out, err := exec.Command("cat", p).Output()
		ds = append(ds, time.Since(t))
		if err != nil || len(out) != 4096 {
			b.Fatal(err, len(out))
		}
	}
	b.StopTimer()
	reportP50(b, ds)
}

// BenchmarkReadFileWarm runs read_file on the 4 KiB file through the real
// runner in a warm sandbox.
func BenchmarkReadFileWarm(b *testing.B) {
	d, p := benchFile(b)
	be := pooled(b, 2)
	spec := toolSpec(d)
	benchCall(b, be, spec, toolFrame(b, "read_file", map[string]string{"path": p}, d.W), "airlock", true)
}

// BenchmarkReadFileWarmBackToBack is read_file with calls back to back:
// the pool refills while calls run, so some calls find it empty.
func BenchmarkReadFileWarmBackToBack(b *testing.B) {
	d, p := benchFile(b)
	be := pooled(b, 2)
	spec := toolSpec(d)
	benchCall(b, be, spec, toolFrame(b, "read_file", map[string]string{"path": p}, d.W), "airlock", false)
}

// BenchmarkReadFileCold runs read_file in a sandbox built for the call.
func BenchmarkReadFileCold(b *testing.B) {
	d, p := benchFile(b)
	spec := toolSpec(d)
	benchCall(b, backend(b), spec, toolFrame(b, "read_file", map[string]string{"path": p}, d.W), "airlock", false)
}

// BenchmarkShellWarm runs the shell tool (`cat` of the file) in a warm
// sandbox.
func BenchmarkShellWarm(b *testing.B) {
	d, p := benchFile(b)
	be := pooled(b, 2)
	spec := toolSpec(d)
	benchCall(b, be, spec, toolFrame(b, "shell", map[string]string{"command": "cat " + p}, d.W), "airlock", true)
}

// BenchmarkShellCold runs the same shell call in a sandbox built for it.
func BenchmarkShellCold(b *testing.B) {
	d, p := benchFile(b)
	spec := toolSpec(d)
	benchCall(b, backend(b), spec, toolFrame(b, "shell", map[string]string{"command": "cat " + p}, d.W), "airlock", false)
}

// protectedSpec is toolSpec(d) with the default grant's protected and
// denied paths of d.W, none of which exists: each call's placeholders are
// made when it claims its sandbox.
func protectedSpec(b testing.TB, d dirs) *sandbox.Spec {
	g, err := grant.FromFlags(d.W, grant.Flags{})
	if err != nil {
		b.Fatal(err)
	}
	spec := toolSpec(d)
	spec.Masks, spec.ReadOnly, spec.ReadOnlyDirs = g.Masks(), g.Protected(), g.ProtectedDirs()
	return spec
}

// BenchmarkReadFileWarmProtected is BenchmarkReadFileWarm in a tree where
// every protected path of the default grant is missing, as in a plain
// directory, with a state directory on the tree's mount, as a session has
// (its records directory): the placeholders move from the depot.
func BenchmarkReadFileWarmProtected(b *testing.B) {
	d, p := benchFile(b)
	be := pooledWith(b, 2, b.TempDir())
	benchCall(b, be, protectedSpec(b, d), toolFrame(b, "read_file", map[string]string{"path": p}, d.W), "airlock", true)
}

// BenchmarkReadFileWarmProtectedNoDepot is BenchmarkReadFileWarmProtected
// with no state directory (or one on another mount): the placeholders are
// made at the claim, the file ones from spares made ahead.
func BenchmarkReadFileWarmProtectedNoDepot(b *testing.B) {
	d, p := benchFile(b)
	be := pooled(b, 2)
	benchCall(b, be, protectedSpec(b, d), toolFrame(b, "read_file", map[string]string{"path": p}, d.W), "airlock", true)
}

// BenchmarkReadFileColdProtected is BenchmarkReadFileCold in a tree where
// every protected path of the default grant is missing: each call makes
// its placeholders while its init starts.
func BenchmarkReadFileColdProtected(b *testing.B) {
	d, p := benchFile(b)
	benchCall(b, backend(b), protectedSpec(b, d), toolFrame(b, "read_file", map[string]string{"path": p}, d.W), "airlock", false)
}
