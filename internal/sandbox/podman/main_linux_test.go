package podman

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandboxtest"
	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/wire"
)

// live is what the live tests share: a static airlock binary built once
// and a local image (busybox in a scratch root) pinned by its digest.
var live struct {
	once      sync.Once
	exe, img  string
	skip, err string
	dir       string
	tag       string // the image's tag, this process's own: removed at the end
}

func TestMain(m *testing.M) {
	// The native backend of the benchmark re-executes this binary.
	sandboxtest.RunHiddenMode()
	code := m.Run()
	if live.dir != "" {
		os.RemoveAll(live.dir)
	}
	if live.tag != "" {
		// Each run imports the image anew: without this, every run left one
		// more untagged image behind.
		_ = exec.Command("podman", "--runtime", "runc", "rmi", "-f", live.tag).Run()
	}
	os.Exit(code)
}

// needPodman skips (or, under AIRLOCK_REQUIRE_FEATURES=1, fails) when the
// host cannot run the live tests.
func needPodman(t testing.TB) {
	t.Helper()
	live.once.Do(setupLive)
	if live.err != "" {
		t.Fatal(live.err)
	}
	if live.skip != "" {
		testenv.RequireFeature(t, live.skip)
	}
}

func setupLive() {
	if _, err := exec.LookPath("podman"); err != nil {
		live.skip = "podman is not installed (apt-get install podman runc)"
		return
	}
	if _, err := exec.LookPath("runc"); err != nil {
		live.skip = "runc is not installed (apt-get install runc)"
		return
	}
	if os.Geteuid() != 0 {
		live.skip = "the podman backend needs root"
		return
	}
	busybox := ""
	for _, p := range []string{"/bin/busybox", "/usr/bin/busybox"} {
		if _, err := staticExe(p); err == nil {
			busybox = p
			break
		}
	}
	if busybox == "" {
		live.skip = "no static busybox for the test image (apt-get install busybox-static)"
		return
	}
	dir, err := os.MkdirTemp("", "airlock-podman-test-")
	if err != nil {
		live.err = err.Error()
		return
	}
	live.dir = dir
	live.exe = filepath.Join(dir, "airlock")
	build := exec.Command("go", "build", "-o", live.exe, "github.com/airlockhq/airlock/cmd/airlock")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		live.err = fmt.Sprintf("building a static airlock: %v\n%s", err, out)
		return
	}
	live.tag = fmt.Sprintf("localhost/airlock-podman-test:%d", os.Getpid())
	img, err := importImage(dir, busybox, live.tag)
	if err != nil {
		live.err = err.Error()
		return
	}
	live.img = img
}

// importImage makes a scratch root holding busybox as /bin/sh and the
// usual applets, imports it and returns it pinned by digest.
func importImage(dir, busybox, tag string) (string, error) {
	bb, err := os.ReadFile(busybox)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []string{"bin/", "etc/", "tmp/", "w/"} {
		_ = tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755})
	}
	_ = tw.WriteHeader(&tar.Header{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bb))})
	_, _ = tw.Write(bb)
	for _, a := range []string{"sh", "cat", "echo", "ls", "mv", "rm", "mkdir", "touch", "sleep", "id", "wget", "nc", "head", "dd", "ln", "chmod", "true"} {
		_ = tw.WriteHeader(&tar.Header{Name: "bin/" + a, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777})
	}
	passwd := []byte("root:x:0:0:root:/:/bin/sh\n")
	_ = tw.WriteHeader(&tar.Header{Name: "etc/passwd", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(passwd))})
	_, _ = tw.Write(passwd)
	if err := tw.Close(); err != nil {
		return "", err
	}
	tarPath := filepath.Join(dir, "root.tar")
	if err := os.WriteFile(tarPath, buf.Bytes(), 0o644); err != nil {
		return "", err
	}
	if out, err := exec.Command("podman", "--runtime", "runc", "import", tarPath, tag).CombinedOutput(); err != nil {
		return "", fmt.Errorf("podman import: %w\n%s", err, out)
	}
	out, err := exec.Command("podman", "--runtime", "runc", "image", "inspect", "--format", "{{.Digest}}", tag).Output()
	if err != nil {
		return "", fmt.Errorf("podman image inspect: %w", err)
	}
	name, _, _ := strings.Cut(tag, ":")
	return name + "@" + strings.TrimSpace(string(out)), nil
}

func newLive(t testing.TB) *Backend {
	t.Helper()
	needPodman(t)
	b, err := New(&Options{Image: live.img, Executable: live.exe})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// call runs one tool through b.
func call(t testing.TB, b sandbox.Backend, spec *sandbox.Spec, tool string, args any) (wire.ToolOutput, *sandbox.Result) {
	t.Helper()
	a, _ := json.Marshal(args)
	in, _ := json.Marshal(wire.ToolInput{Tool: tool, Args: a, Context: wire.CallContext{CallID: "c1", Root: "/", Cwd: spec.Cwd}})
	var stdin, stdout, stderr bytes.Buffer
	if err := wire.WriteFrame(&stdin, in); err != nil {
		t.Fatal(err)
	}
	s := *spec
	s.Stdin, s.Stdout, s.Stderr = &stdin, &stdout, &stderr
	res, err := b.Run(context.Background(), &s)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var out wire.ToolOutput
	if res.ExitCode != 0 {
		return out, res
	}
	frame, err := wire.ReadFrame(&stdout)
	if err != nil {
		t.Fatalf("%s: reading the output frame: %v (stderr %q)", tool, err, stderr.String())
	}
	if err := json.Unmarshal(frame, &out); err != nil {
		t.Fatal(err)
	}
	return out, res
}

func baseSpec(work string) *sandbox.Spec {
	return &sandbox.Spec{
		Mounts: []sandbox.Mount{{Source: work, Writable: true}},
		Env:    []string{"PATH=/usr/bin:/bin", "HOME=" + work, "LANG=C.UTF-8"},
		Cwd:    work,
	}
}
