package main_test

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// build builds the command pkg into dir/name, stamped with stamp (see
// buildmatch.Stamp); airlock-init without cgo, as the README installs it.
func build(t *testing.T, dir, name, pkg, stamp string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-ldflags", "-X github.com/airlockhq/airlock/internal/buildmatch.Stamp="+stamp, "-o", out, pkg)
	if name == "airlock-init" {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", pkg, err, b)
	}
	return out
}

func run(t *testing.T, dir string, argv ...string) string {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, b)
	}
	return string(b)
}

// doctor returns airlock doctor's report, and skips the test where the
// host cannot run airlock's sandbox.
func doctor(t *testing.T, airlock string) string {
	t.Helper()
	report, err := exec.Command(airlock, "doctor").CombinedOutput()
	if err != nil {
		t.Skipf("this host cannot run airlock's sandbox: %v\n%s", err, report)
	}
	return string(report)
}

func stamp(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "test-" + hex.EncodeToString(b)
}

// TestSeparateInitOfTheSameBuild: airlock runs the airlock-init installed
// beside it when both are of one build, says so in doctor, and its calls
// work; an airlock-init of another build is never run (doctor names the
// difference) and the calls work all the same, with airlock as the init.
func TestSeparateInitOfTheSameBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds airlock twice")
	}
	bin := t.TempDir()
	s := stamp(t)
	airlock := build(t, bin, "airlock", "github.com/airlockhq/airlock/cmd/airlock", s)
	initPath := build(t, bin, "airlock-init", "github.com/airlockhq/airlock/cmd/airlock-init", s)
	report := doctor(t, airlock)
	line := func(report string) string {
		for l := range strings.SplitSeq(report, "\n") {
			if strings.HasPrefix(l, "separate init") {
				return l
			}
		}
		return ""
	}
	if l := line(report); !strings.Contains(l, " ok ") || !strings.Contains(l, initPath) || strings.Contains(l, "built with cgo") {
		t.Fatalf("doctor's separate init line %q, want it used from %s, with nothing to say of cgo\n%s", l, initPath, report)
	}
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "notes.txt"), []byte("from the tree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	calls := func() {
		t.Helper()
		out := run(t, work, airlock, "exec", "--", "sh", "-c", "echo hi; grep -E '^(Seccomp|Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):' /proc/self/status")
		if !strings.Contains(out, "hi") || !strings.Contains(out, "Seccomp:\t2") || !strings.Contains(out, "NoNewPrivs:\t1") {
			t.Errorf("exec through the separate init: %q, want hi, a seccomp filter and no_new_privs", out)
		}
		// No capability in any set, the ambient one the spawner carries
		// the init's in through the exec included.
		if n := strings.Count(out, "\t0000000000000000"); n != 5 {
			t.Errorf("exec through the separate init: %q, want every capability set empty", out)
		}
		if out := run(t, work, airlock, "call", "read_file", `{"path":"notes.txt"}`); !strings.Contains(out, "from the tree") {
			t.Errorf("read_file through the separate init: %q", out)
		}
	}
	calls()

	// Another build's init beside it: never run.
	build(t, bin, "airlock-init", "github.com/airlockhq/airlock/cmd/airlock-init", stamp(t))
	if l := line(doctor(t, airlock)); !strings.Contains(l, "MISSING") || !strings.Contains(l, "not of this airlock's build") || !strings.Contains(l, "-ldflags") {
		t.Fatalf("doctor's separate init line %q, want it refused for its other build", l)
	}
	calls()
}

// TestSandboxCannotPlantSeparateInit: with airlock installed inside the
// tree a call may write, a sandbox can neither create an airlock-init
// beside it (the next sandboxes would run it as their init, before any
// restriction) nor replace, rename or remove one that is there, and
// nothing it tried is left beside the binary.
func TestSandboxCannotPlantSeparateInit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds airlock")
	}
	work := t.TempDir()
	s := stamp(t)
	airlock := build(t, work, "airlock", "github.com/airlockhq/airlock/cmd/airlock", s)
	doctor(t, airlock)
	plant := `cp /bin/sh airlock-init 2>&1; echo x > airlock-init 2>&1; ln -s /bin/sh airlock-init 2>&1; mkdir airlock-init 2>&1; ls -la airlock-init 2>&1; echo done`
	out := run(t, work, airlock, "exec", "--", "sh", "-c", plant)
	if !strings.Contains(out, "done") {
		t.Fatalf("the plant script did not run: %q", out)
	}
	if fi, err := os.Lstat(filepath.Join(work, "airlock-init")); err == nil {
		t.Fatalf("a sandbox left an airlock-init beside airlock (%v): %q", fi.Mode(), out)
	}

	// A genuine one beside it: it cannot be changed from inside.
	initPath := build(t, work, "airlock-init", "github.com/airlockhq/airlock/cmd/airlock-init", s)
	before, err := os.ReadFile(initPath)
	if err != nil {
		t.Fatal(err)
	}
	out = run(t, work, airlock, "exec", "--", "sh", "-c",
		`cp /bin/sh airlock-init 2>&1; echo x >> airlock-init 2>&1; chmod 777 airlock-init 2>&1; mv airlock-init moved 2>&1; rm -f airlock-init 2>&1; echo done`)
	if !strings.Contains(out, "done") {
		t.Fatalf("the replace script did not run: %q", out)
	}
	after, err := os.ReadFile(initPath)
	if err != nil || string(after) != string(before) {
		t.Fatalf("a sandbox changed the airlock-init beside airlock (%v): %q", err, out)
	}
	if fi, err := os.Stat(initPath); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("airlock-init after the sandbox: %v %v", fi, err)
	}
	if _, err := os.Lstat(filepath.Join(work, "moved")); err == nil {
		t.Fatal("a sandbox renamed the airlock-init beside airlock")
	}
}
