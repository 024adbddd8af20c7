package cli

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestKubeDoctorPodSecurity: airlock doctor --remote passes the pods'
// security profile to the helper, from --pod-security or from the
// grant's remote.pod_security (and its endpoint and runtime class), and
// refuses a profile it does not know before running anything.
func TestKubeDoctorPodSecurity(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake helper is a shell script")
	}
	dir := t.TempDir()
	argsFile := filepath.Join(dir, "args")
	helper := filepath.Join(dir, "airlock-kube")
	if err := os.WriteFile(helper, []byte("#!/bin/sh\necho \"$@\" > "+argsFile+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AIRLOCK_KUBE", helper)
	g := filepath.Join(dir, "g.toml")
	if err := os.WriteFile(g, []byte("[paths]\nread_write = [\".\"]\n[remote]\nendpoint = \"kube://agents/hands\"\nruntime_class = \"kata\"\npod_security = \"userns\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--remote", "kube://agents/hands", "--pod-security", "userns"}, "doctor --pod-security userns kube://agents/hands"},
		{[]string{"--grant", g}, "doctor --runtime-class kata --pod-security userns kube://agents/hands"},
		{[]string{"--grant", g, "--pod-security", "restricted", "--remote", "kube://other/hands"}, "doctor --runtime-class kata --pod-security restricted kube://other/hands"},
		{[]string{"--remote", "kube://agents/hands"}, "doctor kube://agents/hands"},
	} {
		os.Remove(argsFile)
		code, _, stderr := runCLI(t, dir, append([]string{"doctor"}, tc.args...)...)
		got, _ := os.ReadFile(argsFile)
		if code != 0 || strings.TrimSpace(string(got)) != tc.want {
			t.Errorf("doctor %v: exit %d, helper ran with %q, want %q; stderr %s", tc.args, code, got, tc.want, stderr)
		}
	}
	os.Remove(argsFile)
	code, _, stderr := runCLI(t, dir, "doctor", "--remote", "kube://agents/hands", "--pod-security", "privileged")
	if _, err := os.Stat(argsFile); err == nil || code != exitUsage || !strings.Contains(stderr, `--pod-security "privileged" is not "restricted" or "userns"`) {
		t.Errorf("an unknown profile: exit %d, stderr %s; the helper ran: %v", code, stderr, err == nil)
	}
}
