package linux_test

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// dirs are the conventional hostile-case directories: W a rw grant, R a
// ro grant, O an ungranted host directory holding a canary.
type dirs struct {
	W, R, O string
	canary  string
}

func newDirs(t testing.TB) dirs {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 16)
	rand.Read(b)
	d := dirs{W: filepath.Join(base, "w"), R: filepath.Join(base, "r"), O: filepath.Join(base, "o"), canary: hex.EncodeToString(b)}
	for _, p := range []string{d.W, d.R, d.O} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{filepath.Join(d.O, "canary"), filepath.Join(d.R, "f")} {
		if err := os.WriteFile(p, []byte(d.canary), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func (d dirs) mounts() []sandbox.Mount {
	return []sandbox.Mount{{Source: d.W, Writable: true}, {Source: d.R}}
}

// snapshot lists O's tree with contents, to show it is unchanged.
func snapshot(t testing.TB, root string) string {
	t.Helper()
	var sb strings.Builder
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		sb.WriteString(p + " " + fi.Mode().String())
		if fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			sb.WriteString(" " + string(b))
		}
		sb.WriteString("\n")
		return nil
	})
	return sb.String()
}

// noCanary fails if the canary shows up in any output.
func (d dirs) noCanary(t testing.TB, o out) {
	t.Helper()
	if strings.Contains(o.stdout+o.stderr, d.canary) {
		t.Fatalf("canary leaked: stdout %q stderr %q", o.stdout, o.stderr)
	}
}

// procsMatching lists host pids whose command line contains s.
func procsMatching(s string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), s) {
			out = append(out, pid)
		}
	}
	return out
}

// waitNoProcs waits briefly for processes matching s to vanish.
func waitNoProcs(t testing.TB, s string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		ps := procsMatching(s)
		if len(ps) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v matching %q outlived Run", ps, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sandboxCgroups lists leftover airlock cgroups of this process.
func sandboxCgroups(t testing.TB) []string {
	t.Helper()
	var out []string
	pat := "airlock-" + strconv.Itoa(os.Getpid()) + "-*"
	for _, root := range []string{"/sys/fs/cgroup"} {
		filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
			if err != nil || !fi.IsDir() {
				return nil
			}
			if ok, _ := filepath.Match(pat, fi.Name()); ok {
				out = append(out, p)
				return filepath.SkipDir
			}
			if strings.Count(strings.TrimPrefix(p, root), "/") > 4 {
				return filepath.SkipDir
			}
			return nil
		})
	}
	return out
}

// python reports whether python3 is usable in the sandbox.
func needPython(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 on this host (a test dependency, not a kernel feature)")
	}
}

// acceptUnenforced is the Limits.AllowUnenforced of the tests' specs: an
// unprivileged run (where the host may give no cgroups) accepts memory and
// process limits that are not enforced, as a user would with
// --allow-unenforced-limits. Where cgroups exist it changes nothing; tests
// of those limits check hasCgroups, and TestUnprivChild checks the refusal.
var acceptUnenforced = os.Geteuid() != 0

// hasCgroups reports whether the backend runs sandboxes in cgroups.
func hasCgroups(b interface{ Report() sandbox.Report }) bool {
	for _, f := range b.Report().Features {
		if strings.HasPrefix(f.Name, "cgroup v") && f.Available {
			return true
		}
	}
	return false
}

// inModes runs f twice, as subtests: "cold" with a command-mode spec run
// on the shared backend, and "warm" with the same script run from the
// in-process tool of a sandbox taken from a pool, which is built before the
// call and protected only when the call claims it. f gets the runner of
// its mode; a script is the shell script the spec's command would run.
func inModes(t *testing.T, f func(t *testing.T, run func(spec *sandbox.Spec, script string) out)) {
	t.Run("cold", func(t *testing.T) {
		f(t, func(spec *sandbox.Spec, script string) out {
			s := *spec
			s.Command = []string{"/bin/sh", "-c", script}
			return run(t, &s)
		})
	})
	t.Run("warm", func(t *testing.T) {
		b := pooled(t, 1)
		f(t, func(spec *sandbox.Spec, script string) out {
			s := *spec
			s.Command = nil
			if s.Limits.Wall == 0 {
				s.Limits.Wall = 30 * time.Second
			}
			s.Limits.AllowUnenforced = acceptUnenforced
			if err := b.Prewarm(&s); err != nil {
				t.Fatal(err)
			}
			waitWarm(t, b, &s, 1)
			o := callWith(t, b, &s, "sh:"+script)
			if !warm(o) {
				t.Fatalf("the call was not warm: %v", o.res.Isolation.Features)
			}
			b.Pool(0)() // waits for the call's teardown
			return o
		})
	})
}
