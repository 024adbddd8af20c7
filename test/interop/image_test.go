package interop_test

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/testenv"
)

// podmanRun are the flags the hands' container needs on a host like CI's
// (see docs/remote.md): rlimits within the host's hard limits, the
// sandbox's own seccomp filter and a fresh /proc instead of the engine's
// masking, and the host's cgroups writable for the memory and process limits.
// This is not how a restricted pod runs: under the engine's default /proc
// masks and seccomp profile the sandbox cannot start, and without the host's
// cgroups calls with memory and process limits are refused. That pod is
// TestHandsRestrictedPod's.
var podmanRun = []string{
	"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
	"--security-opt", "seccomp=unconfined", "--security-opt", "systempaths=unconfined",
	"--security-opt", "apparmor=unconfined",
	"--cgroupns=host", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw",
}

// TestHandsImage builds the Containerfile's image (over a base made here
// from the host's static busybox, so nothing is pulled) and runs a call
// on hands in a container given what the sandbox needs (podmanRun):
// spawned over stdio (podman run -i), and reached over WebSocket.
func TestHandsImage(t *testing.T) {
	tag := handsImage(t)
	podman := func(stdin io.Reader, args ...string) string {
		t.Helper()
		cmd := exec.Command("podman", args...)
		cmd.Stdin = stdin
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	dir := t.TempDir()

	w := newWorkspace(t)
	call := func(extra ...string) string {
		t.Helper()
		args := append([]string{"call", "--root", w.root}, extra...)
		args = append(args, "read_file", `{"path":"hello.txt"}`)
		c := exec.Command(airlock(t), args...)
		c.Env = append(os.Environ(), "AIRLOCK_STATE_DIR="+w.records)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("airlock %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	want := call()
	run := append([]string{"run", "--rm", "-i", "--network=none"}, podmanRun...)
	run = append(run, "-v", w.root+":"+w.root, tag, "--root", w.root)
	if got := call("--remote", "stdio:podman "+strings.Join(run, " ")); got != want {
		t.Fatalf("over stdio into the container: %q, want %q", got, want)
	}

	// Over WebSocket: the container in the host's network namespace,
	// listening on loopback.
	tokenFile := filepath.Join(dir, "token")
	os.WriteFile(tokenFile, []byte("container-token-0123456789"), 0o644)
	name := "airlock-hands-test-" + randomHex(4)
	ws := append([]string{"run", "-d", "--rm", "--name", name, "--network=host"}, podmanRun...)
	ws = append(ws, "-v", w.root+":"+w.root, "-v", tokenFile+":/run/token:ro", tag,
		"--root", w.root, "--listen", "127.0.0.1:0", "--token-file", "/run/token")
	podman(nil, ws...)
	t.Cleanup(func() { exec.Command("podman", "rm", "-f", name).Run() })
	// The tool-server says the port it bound: one picked free and released
	// for it could be taken by another process in between.
	addr := listeningAt(t, []string{"logs", name})
	if got := call("--remote", "ws://"+addr, "--remote-token-file", tokenFile); got != want {
		t.Fatalf("over WebSocket into the container: %q, want %q", got, want)
	}
}

// handsImage builds the Containerfile's image over a base made here from
// the host's static busybox (so nothing is pulled), for this test only,
// and returns its tag. It skips where podman or busybox is missing.
func handsImage(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("podman"); err != nil {
		t.Skip("podman is not installed: the hands' image is not built here")
	}
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		t.Skip("no busybox on this host to make an offline base image from")
	}
	needNative(t)
	dir := t.TempDir()
	tag := "localhost/airlock-hands-test-" + randomHex(4)
	base := tag + "-base"
	// The base: busybox as /bin/sh and friends, and empty system directories.
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	bb, err := os.ReadFile(busybox)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"bin/", "etc/", "tmp/", "usr/", "lib/", "workspace/"} {
		tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755})
	}
	tw.WriteHeader(&tar.Header{Name: "bin/busybox", Mode: 0o755, Size: int64(len(bb))})
	tw.Write(bb)
	for _, l := range []string{"sh", "cat", "echo", "ls", "sleep"} {
		tw.WriteHeader(&tar.Header{Name: "bin/" + l, Typeflag: tar.TypeSymlink, Linkname: "busybox"})
	}
	tw.Close()
	podman := func(stdin io.Reader, args ...string) string {
		t.Helper()
		cmd := exec.Command("podman", args...)
		cmd.Stdin = stdin
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	podman(&tb, "import", "-", base)
	t.Cleanup(func() { exec.Command("podman", "rmi", "-f", tag, base).Run() })
	ctxDir := filepath.Join(dir, "ctx")
	os.Mkdir(ctxDir, 0o755)
	build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(ctxDir, "airlock"), "github.com/airlockhq/airlock/cmd/airlock")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("static build: %v\n%s", err, out)
	}
	podman(nil, "build", "-q", "-f", "../../Containerfile", "--build-arg", "BASE="+base, "-t", tag, ctxDir)
	return tag
}

// needNative skips (or fails under AIRLOCK_REQUIRE_FEATURES) when this host
// has no native sandbox: remote hands always sandbox.
func needNative(t *testing.T) {
	t.Helper()
	if args := sandboxArgs(t); len(args) > 0 {
		testenv.RequireFeature(t, "the native sandbox, which remote hands always use")
	}
}

// listeningAt waits until the log podman's logs args print says where a
// tool-server listens, and returns that address.
func listeningAt(t *testing.T, logs []string) string {
	t.Helper()
	re := regexp.MustCompile(`airlock tool-server: listening on [a-z]+://(\S+) as `)
	var addr string
	eventually(t, 60*time.Second, "the hands to listen", func() bool {
		out, _ := exec.Command("podman", logs...).CombinedOutput()
		if m := re.FindSubmatch(out); m != nil {
			addr = string(m[1])
		}
		return addr != ""
	})
	return addr
}
