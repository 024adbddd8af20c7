package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestExecBindMountAliasRefused runs `airlock exec` in a mount namespace
// of its own (unshare -m) where / is bind-mounted inside a directory, as
// a container's -v /:/host or a chroot's binds make it, through the native
// sandbox. A grant is judged by the path it names, so --rw HOST/etc (which
// is /etc) was granted read-write, and a read-only tree holding HOST gave
// the sandbox the whole file system (red team: it read a file outside
// every grant). Both are refused now, naming the bind mount; a bind mount
// of an ordinary directory is granted as before.
func TestExecBindMountAliasRefused(t *testing.T) {
	if dir := os.Getenv("AIRLOCK_TEST_BIND_ALIAS"); dir != "" {
		bindAliasChild(t, dir)
		return
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and unshare(1) to bind-mount / in a mount namespace of the test's own")
	}
	T, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"w/host", "v/b", "work"} {
		if err := os.MkdirAll(filepath.Join(T, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(T, "outside.txt"), []byte("CANARY-bind-alias-91d0"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(unshare, "-m", "--propagation", "private", "sh", "-c",
		`mount --bind / "$1/w/host" && mount --bind "$1/work" "$1/v/b" && exec "$2" -test.run '^TestExecBindMountAliasRefused$' -test.v`,
		"sh", T, os.Args[0])
	cmd.Env = append(os.Environ(), "AIRLOCK_TEST_BIND_ALIAS="+T, "AIRLOCK_STATE_DIR="+filepath.Join(T, "state"))
	cmd.Dir = filepath.Join(T, "work")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("in a mount namespace with / bound at %s/w/host: %v\n%s", T, err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestExecBindMountAliasRefused") {
		t.Fatalf("the child did not run the test:\n%s", out)
	}
}

// bindAliasChild is TestExecBindMountAliasRefused in the mount namespace
// where / is bound at T/w/host and T/work at T/v/b.
func bindAliasChild(t *testing.T, T string) {
	run := func(flags ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		args := append(append(append([]string{"exec"}, execFlags()...), flags...), "--", "sh", "-c", "cat "+T+"/w/host"+T+"/outside.txt; echo RAN")
		code := Main(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	for _, tt := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--ro", T + "/w"}, "which shows / (a bind mount)"},
		{[]string{"--rw", T + "/w/host/etc"}, "it is /etc too, through a bind mount"},
		{[]string{"--ro", T + "/w/host/proc"}, "kernel"},
	} {
		code, out := run(tt.flags...)
		if strings.Contains(out, "CANARY-bind-alias") || strings.Contains(out, "RAN") || code != exitExecFailure || !strings.Contains(out, tt.want) {
			t.Errorf("%v: exit %d, want a refusal saying %q:\n%s", tt.flags, code, tt.want, out)
		}
	}
	if code, out := run("--rw", T+"/v"); code != 0 || !strings.Contains(out, "RAN") {
		t.Errorf("--rw over a bind mount of an ordinary directory: exit %d:\n%s", code, out)
	}
}
