package podman

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// importWithConfig imports the live test image's root again under a tag of
// its own with the image configuration changes (Dockerfile instructions,
// as podman import --change takes them), and returns it pinned by digest.
func importWithConfig(t *testing.T, name string, changes ...string) string {
	t.Helper()
	needPodman(t)
	tag := fmt.Sprintf("localhost/airlock-podman-test-%s:%d", name, os.Getpid())
	args := []string{"--runtime", "runc", "import"}
	for _, c := range changes {
		args = append(args, "--change", c)
	}
	args = append(args, filepath.Join(live.dir, "root.tar"), tag)
	if out, err := exec.Command("podman", args...).CombinedOutput(); err != nil {
		t.Fatalf("podman import: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("podman", "--runtime", "runc", "rmi", "-f", tag).Run() })
	out, err := exec.Command("podman", "--runtime", "runc", "image", "inspect", "--format", "{{.Digest}}", tag).Output()
	if err != nil {
		t.Fatalf("podman image inspect: %v", err)
	}
	repo, _, _ := strings.Cut(tag, ":")
	return repo + "@" + strings.TrimSpace(string(out))
}

// TestImageConfigCannotWidenTheContainer: the image is the user's choice,
// but its configuration is not a grant. An image that declares a VOLUME
// (many published images do) had Podman create a writable anonymous
// volume for it, under /var/lib/containers on the host: a writable place
// in the container besides the grants and the sized /tmp, outside the
// read-only root, the tmpfs size, the disk guard and every grant, where a
// call could fill the host's disk. Only the grants and /tmp may take a
// write, whatever the image says.
func TestImageConfigCannotWidenTheContainer(t *testing.T) {
	img := importWithConfig(t, "volume", "VOLUME /data", "VOLUME /var/cache/x",
		"LABEL io.containers.capabilities=CAP_SYS_ADMIN,CAP_NET_RAW,CAP_DAC_OVERRIDE", "ENV IMAGE_SECRET=planted")
	b, err := New(&Options{Image: img, Executable: live.exe})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	work := t.TempDir()
	spec := baseSpec(work)
	out, res := sh(t, b, spec, `for d in /data /var/cache/x; do if echo x > $d/probe 2>/dev/null; then echo "wrote $d"; fi; done; `+
		`head -c 8388608 /dev/zero > /data/fill 2>/dev/null && echo "filled /data"; cat /proc/self/mountinfo | grep -E ' /data | /var/cache/x ' ; `+
		`grep -E '^Cap(Eff|Prm|Bnd|Amb)' /proc/self/status; env | grep IMAGE_SECRET; echo done`)
	if !strings.Contains(out, "done") {
		t.Fatalf("the script did not run: %q %+v", out, res)
	}
	if strings.Contains(out, "wrote ") || strings.Contains(out, "filled ") {
		t.Errorf("the image's VOLUMEs are writable in the container:\n%s", out)
	}
	for _, c := range []string{"CapEff", "CapPrm", "CapBnd", "CapAmb"} {
		if !strings.Contains(out, c+":\t0000000000000000\n") {
			t.Errorf("the image's label gave the container capabilities (%s):\n%s", c, out)
		}
	}
	if strings.Contains(out, "IMAGE_SECRET") {
		t.Errorf("the image's environment reached the container:\n%s", out)
	}
}
