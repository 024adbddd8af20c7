package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"github.com/airlockhq/airlock/internal/testenv"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/native"
)

// TestUnprivilegedLimits re-runs the CLI as uid 65534 through setpriv, a
// user who may manage no cgroup on this host, so the memory and process
// limits cannot be enforced. The child half is TestUnprivLimitsChild.
func TestUnprivilegedLimits(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch to uid 65534")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) not installed; a test tool, not a kernel feature")
	}
	dir, err := os.MkdirTemp("", "airlock-cli-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "cli.test")
	testenv.CopyExecutable(t, os.Args[0], bin)
	ws, state := filepath.Join(dir, "ws"), filepath.Join(dir, "state")
	for _, d := range []string{ws, state} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin, "-test.run=^TestUnprivLimitsChild$", "-test.v", "-test.count=1")
	cmd.Env = []string{"AIRLOCK_UNPRIV_CHILD=1", "PATH=/usr/bin:/bin", "TMPDIR=/tmp", "HOME=" + ws, "AIRLOCK_STATE_DIR=" + state,
		"AIRLOCK_REQUIRE_FEATURES=" + os.Getenv("AIRLOCK_REQUIRE_FEATURES")}
	cmd.Dir = ws
	outb, err := cmd.CombinedOutput()
	t.Logf("child output:\n%s", outb)
	if err != nil {
		t.Fatalf("unprivileged run failed: %v", err)
	}
	if !strings.Contains(string(outb), "--- PASS: TestUnprivLimitsChild") {
		t.Fatal("child did not pass")
	}
}

// TestUnprivLimitsChild is the unprivileged half of TestUnprivilegedLimits:
// a call that asks for memory and process limits is refused with the reason
// and the fix; with the opt-out (flag or grant key) it runs, and every result
// says which limits did not hold, in its label and its audit record; doctor
// and check say what is and is not enforced.
func TestUnprivLimitsChild(t *testing.T) {
	if os.Getenv("AIRLOCK_UNPRIV_CHILD") != "1" {
		t.Skip("runs only as the child of TestUnprivilegedLimits")
	}
	if os.Geteuid() == 0 {
		t.Fatal("child runs as root")
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 on this host (a test dependency, not a kernel feature)")
	}
	b, err := native.New(nil)
	if err != nil {
		t.Fatalf("native backend: %v", err)
	}
	for _, f := range b.Report().Features {
		if strings.HasPrefix(f.Name, "cgroup v") && f.Available {
			t.Skipf("uid %d may manage cgroups on this host (%s): nothing to refuse", os.Geteuid(), f.Detail)
		}
	}
	run := func(t *testing.T, args ...string) (code int, stdout, stderr string) {
		t.Helper()
		var so, se bytes.Buffer
		code = Main(context.Background(), args, strings.NewReader(""), &so, &se)
		return code, so.String(), se.String()
	}
	bomb := []string{"--", "python3", "-c", "b = bytearray(300 * 2**20); print('allocated', len(b))"}

	t.Run("exec refused", func(t *testing.T) {
		code, so, se := run(t, append([]string{"exec", "--memory", "64MiB"}, bomb...)...)
		if code != 125 || strings.Contains(so, "allocated") {
			t.Fatalf("exit %d stdout %q stderr %q; want 125 and nothing run", code, so, se)
		}
		for _, want := range []string{"memory limit (64MiB)", "process limit (256)", "Delegate=yes", "--allow-unenforced-limits"} {
			if !strings.Contains(se, want) {
				t.Errorf("stderr %q does not say %q", se, want)
			}
		}
	})
	t.Run("exec opt-out", func(t *testing.T) {
		code, so, se := run(t, append([]string{"exec", "--allow-unenforced-limits", "--memory", "64MiB"}, bomb...)...)
		if code != 0 || !strings.Contains(so, "allocated") {
			t.Fatalf("exit %d stdout %q stderr %q; want the command run", code, so, se)
		}
		if !strings.Contains(se, "NOT ENFORCED: the memory limit (64MiB) and the process limit (256)") {
			t.Errorf("stderr %q does not say which limits did not hold", se)
		}
	})
	t.Run("call refused", func(t *testing.T) {
		code, so, se := run(t, "call", "shell", `{"command": "echo ran"}`)
		if code != 1 || strings.Contains(so, "ran\n") {
			t.Fatalf("exit %d stdout %q stderr %q; want refused", code, so, se)
		}
		for _, want := range []string{"memory limit (1GiB)", "Delegate=yes", "--allow-unenforced-limits"} {
			if !strings.Contains(so, want) {
				t.Errorf("output %q does not say %q", so, want)
			}
		}
	})
	const label = "limits NOT ENFORCED: memory, processes"
	t.Run("call opt-out flag", func(t *testing.T) {
		code, so, se := run(t, "call", "--allow-unenforced-limits", "shell", `{"command": "echo flag-ran"}`)
		if code != 0 || !strings.Contains(so, "flag-ran") || !strings.Contains(so, label) {
			t.Fatalf("exit %d stdout %q stderr %q; want the call run and its label to say %q", code, so, se, label)
		}
		if got := lastCall(t).Unenforced; !slices.Equal(got, []string{"memory", "processes"}) {
			t.Errorf("audit record unenforced_limits = %v, want [memory processes]", got)
		}
		if _, so, _ := run(t, "log"); !strings.Contains(so, "ok (NOT ENFORCED: memory, processes)") {
			t.Errorf("airlock log does not say which limits did not hold:\n%s", so)
		}
	})
	t.Run("call opt-out grant", func(t *testing.T) {
		if err := os.WriteFile("grant.toml", []byte("[paths]\nread_write = [\".\"]\n[limits]\nunenforced = \"allow\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, so, se := run(t, "call", "--grant", "grant.toml", "shell", `{"command": "echo grant-ran"}`)
		if code != 0 || !strings.Contains(so, "grant-ran") || !strings.Contains(so, label) {
			t.Fatalf("exit %d stdout %q stderr %q; want the call run and its label to say %q", code, so, se, label)
		}
		if got := lastCall(t).Unenforced; !slices.Equal(got, []string{"memory", "processes"}) {
			t.Errorf("audit record unenforced_limits = %v, want [memory processes]", got)
		}
	})
	t.Run("doctor", func(t *testing.T) {
		code, so, _ := run(t, "doctor")
		if code != 1 || strings.Contains(so, "ready: this host") {
			t.Errorf("doctor exit %d, output:\n%s\nwant not ready", code, so)
		}
		for _, re := range []string{`(?m)^  memory +NOT ENFORCED`, `(?m)^  processes +NOT ENFORCED`, `(?m)^  time +enforced`, `Delegate=yes`, `--allow-unenforced-limits`} {
			if !regexp.MustCompile(re).MatchString(so) {
				t.Errorf("doctor output does not match %s:\n%s", re, so)
			}
		}
	})
	t.Run("check", func(t *testing.T) {
		code, so, _ := run(t, "check", "-", "shell", `{"command": "true"}`)
		if code != 1 || !strings.Contains(so, "host:     cannot enforce memory, processes") || !strings.Contains(so, "refused") {
			t.Errorf("check exit %d, output:\n%s\nwant the host's refusal named", code, so)
		}
		code, so, _ = run(t, "check", "grant.toml", "shell", `{"command": "true"}`)
		if code != 0 || !strings.Contains(so, "host:     cannot enforce memory, processes") || !strings.Contains(so, `limits.unenforced = "allow"`) {
			t.Errorf("check with the opt-out: exit %d, output:\n%s", code, so)
		}
	})
}

// callRecord is the part of an audit record these tests read.
type callRecord struct {
	audit.Record
	Unenforced []string `json:"unenforced_limits"`
}

// lastCall returns the last call record under $AIRLOCK_STATE_DIR.
func lastCall(t *testing.T) callRecord {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(os.Getenv("AIRLOCK_STATE_DIR"), "*", audit.FileName))
	var last callRecord
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			var r callRecord
			if json.Unmarshal(sc.Bytes(), &r) == nil && r.Kind == audit.KindCall && r.Time.After(last.Time) {
				last = r
			}
		}
		fh.Close()
	}
	if last.Kind == "" {
		t.Fatal("no call record")
	}
	return last
}
