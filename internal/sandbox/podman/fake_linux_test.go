package podman

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// fakeStaticELF writes the header of a 64-bit ELF with no program headers
// (so no interpreter): enough for the static-binary check; the fake
// podman never runs it.
func fakeStaticELF(t *testing.T) string {
	var h [64]byte
	copy(h[:], "\x7fELF\x02\x01\x01")
	binary.LittleEndian.PutUint16(h[16:], 2)  // ET_EXEC
	binary.LittleEndian.PutUint16(h[18:], 62) // EM_X86_64
	binary.LittleEndian.PutUint32(h[20:], 1)  // EV_CURRENT
	binary.LittleEndian.PutUint16(h[52:], 64) // e_ehsize
	binary.LittleEndian.PutUint16(h[54:], 56) // e_phentsize
	binary.LittleEndian.PutUint16(h[58:], 64) // e_shentsize
	p := filepath.Join(t.TempDir(), "airlock")
	if err := os.WriteFile(p, h[:], 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// fakePodman writes a podman that records each invocation's arguments to
// log and, for `run`, prints stderr and exits with code.
func fakePodman(t *testing.T, code int, stderr string) (path, log string) {
	dir := t.TempDir()
	log = filepath.Join(dir, "args.log")
	path = filepath.Join(dir, "podman")
	script := fmt.Sprintf(`#!/bin/sh
printf '%%s ' "$@" >> %q
echo >> %q
while [ "${1#--}" != "$1" ]; do shift 2; done # global flags
if [ "$1" = run ]; then
	cat >/dev/null
	printf '%%s' %q >&2
	exit %d
fi
if [ "$1" = image ] && [ -e %q ]; then
	exit 1
fi
exit 0
`, log, log, stderr, code, filepath.Join(dir, "no-image"))
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, log
}

func newFake(t *testing.T, code int, stderr string) (*Backend, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the podman backend needs root (idmapped mounts)")
	}
	podman, log := fakePodman(t, code, stderr)
	b, err := New(&Options{Image: testImage, Podman: podman, Runtime: "true", Executable: fakeStaticELF(t), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, log
}

// TestFakeFailures: Podman's own failures become a RunError naming the
// fix, never a tool result; 137 is a kill by SIGKILL.
func TestFakeFailures(t *testing.T) {
	for _, tc := range []struct {
		name, stderr string
		code         int
		fix          string
	}{
		{"missing image", "Error: " + testImage + ": image not known\n", 125, "podman pull"},
		{"crun cgroup", "Error: crun: cannot set memory limit: cgroup v1 mount not found: OCI runtime error\n", 126, "use runc"},
		{"missing runtime", "Error: default OCI runtime \"runc\" not found: invalid argument\n", 125, "apt-get install runc"},
		{"not found", "Error: runc: exec: \"/.airlock/airlock\": no such file\n", 127, "airlock doctor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, log := newFake(t, tc.code, tc.stderr)
			res, err := b.Run(context.Background(), baseSpec(t.TempDir()))
			var re *RunError
			if !errors.As(err, &re) {
				t.Fatalf("Run = %+v, %v; want a RunError", res, err)
			}
			if re.Code != tc.code || !strings.Contains(err.Error(), tc.fix) || !strings.Contains(err.Error(), "could not run") {
				t.Errorf("error %q (code %d), want code %d and fix %q", err, re.Code, tc.code, tc.fix)
			}
			args, _ := os.ReadFile(log)
			if !bytes.Contains(args, []byte(" run --rm ")) || !bytes.Contains(args, []byte("rm --force --ignore airlock-")) {
				t.Errorf("podman was not run, then asked to remove the container:\n%s", args)
			}
		})
	}
}

func TestFakeKilled(t *testing.T) {
	b, _ := newFake(t, 137, "")
	res, err := b.Run(context.Background(), baseSpec(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != -1 || res.Signal != int(syscall.SIGKILL) {
		t.Errorf("result %+v, want killed by SIGKILL", res)
	}
}

func TestFakeRefusals(t *testing.T) {
	b, log := newFake(t, 0, "")
	work := t.TempDir()
	bad := filepath.Join(work, "a,b")
	if err := os.Mkdir(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := baseSpec(bad)
	_, err := b.Run(context.Background(), spec)
	var me *MountPathError
	if !errors.As(err, &me) {
		t.Errorf("grant path with a comma: %v, want a MountPathError", err)
	}
	link := filepath.Join(work, "link")
	if err := os.Symlink(work, link); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Run(context.Background(), baseSpec(link)); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("grant path that is a symlink: %v, want a refusal", err)
	}
	if err := os.Symlink("/etc", filepath.Join(work, ".bashrc")); err != nil {
		t.Fatal(err)
	}
	spec = baseSpec(work)
	spec.ReadOnly = []string{filepath.Join(work, ".bashrc")}
	if _, err := b.Run(context.Background(), spec); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("protected path that is a symlink: %v, want a refusal", err)
	}
	if args, _ := os.ReadFile(log); bytes.Contains(args, []byte(" run ")) {
		t.Errorf("podman ran for a refused spec:\n%s", args)
	}
	if _, err := New(&Options{Image: "debian:12", Podman: "/bin/true"}); err == nil || !strings.Contains(err.Error(), "pin the image by digest") {
		t.Errorf("New with a tag: %v, want a refusal naming the digest form", err)
	}
	_ = sandbox.Spec{}
}

// TestFakeMissingImage: New refuses an image the host does not have,
// saying how to load it.
func TestFakeMissingImage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the podman backend needs root (idmapped mounts)")
	}
	podman, _ := fakePodman(t, 0, "")
	if err := os.WriteFile(filepath.Join(filepath.Dir(podman), "no-image"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(&Options{Image: testImage, Podman: podman, Runtime: "true", Executable: fakeStaticELF(t)})
	var re *RunError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "podman pull") {
		t.Errorf("New = %v, want a RunError saying how to load the image", err)
	}
	_, err = New(&Options{Image: testImage, Podman: podman, Runtime: "no-such-runtime-xyz", Executable: fakeStaticELF(t)})
	if err == nil || !strings.Contains(err.Error(), "apt-get install no-such-runtime-xyz") {
		t.Errorf("New with a missing runtime = %v, want the install fix", err)
	}
}

// TestFakeStopInitNotReady: a stop that reaches the container while its
// init cannot hear signals yet (the kernel drops a SIGTERM to a PID 1
// without a handler, and podman kill succeeds) still ends the command.
// The fake podman drops every signal but KILL, as the kernel does in that
// window, and its init ends as a stopped command once it reads the stop
// from the control pipe. A lost stop shows as the time limit.
func TestFakeStopInitNotReady(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the podman backend needs root (idmapped mounts)")
	}
	dir := t.TempDir()
	pid := filepath.Join(dir, "run.pid")
	podman := filepath.Join(dir, "podman")
	script := fmt.Sprintf(`#!/bin/sh
while [ "${1#--}" != "$1" ]; do shift 2; done # global flags
case "$1" in
run)
	echo $$ > %[1]q
	b=$(head -c1 <&%[2]d 2>/dev/null | od -An -tu1 | tr -d ' ')
	[ "$b" = 15 ] && exit 143
	exec sleep 987651
	;;
kill)
	[ "$3" = KILL ] && kill -9 "$(cat %[1]q)"
	exit 0
	;;
esac
exit 0
`, pid, ControlFD)
	if err := os.WriteFile(podman, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := New(&Options{Image: testImage, Podman: podman, Runtime: "true", Executable: fakeStaticELF(t), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	spec := baseSpec(t.TempDir())
	spec.Command = []string{"/bin/sh", "-c", "sleep 987651"}
	stop := make(chan struct{})
	close(stop)
	spec.Stop = stop
	res, err := b.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Signal != int(syscall.SIGTERM) || res.Limit != "" {
		t.Errorf("result %+v, want ended by the stop's SIGTERM", res)
	}
}
