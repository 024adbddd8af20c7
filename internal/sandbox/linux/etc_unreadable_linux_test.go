package linux_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// etcChildEnv marks the run of TestEtcUnreadableMasked in a mount
// namespace of its own.
const etcChildEnv = "AIRLOCK_TEST_ETC_CHILD"

// Case 10, /etc: what only its owner and group may read in the /etc
// entries a sandbox gets (the host's TLS keys in /etc/ssl/private, root's
// and group ssl-cert's, mode 0710) is masked, though under a root broker
// the sandbox's uid 0 is their owner; the rest reads as on the host. The
// test re-runs itself in a mount namespace of its own, where a tmpfs over
// /etc/ssl holds such files, so the host's /etc is never touched.
func TestEtcUnreadableMasked(t *testing.T) {
	if os.Getenv(etcChildEnv) == "" {
		if os.Geteuid() != 0 {
			t.Skip("needs root, to replace /etc/ssl in a mount namespace of its own (the containment suite runs the unprivileged broker)")
		}
		unshare, err := exec.LookPath("unshare")
		if err != nil {
			t.Skip("unshare (util-linux) not installed; a test tool, not a kernel feature")
		}
		if fi, err := os.Stat("/etc/ssl"); err != nil || !fi.IsDir() {
			t.Skip("this host has no /etc/ssl directory to stand in for")
		}
		cmd := exec.Command(unshare, "--mount", "--propagation", "private", os.Args[0], "-test.run=^TestEtcUnreadableMasked$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), etcChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestEtcUnreadableMasked") {
			t.Fatalf("the run in a mount namespace of its own failed: %v\n%s", err, out)
		}
		return
	}
	if err := unix.Mount("tmpfs", "/etc/ssl", "tmpfs", 0, "mode=0755"); err != nil {
		t.Fatalf("replacing /etc/ssl in this mount namespace: %v", err)
	}
	const secret = "etc-secret-canary"
	for _, f := range []struct {
		path, content string
		mode          os.FileMode
	}{
		{"certs/ca.pem", "public-cert\n", 0o644},
		{"private/server.key", secret + "-private\n", 0o640},
		{"server.key", secret + "-top\n", 0o600},
		{"certs/deep/old.key", secret + "-deep\n", 0o600},
		{"closed/inside.pem", secret + "-closed\n", 0o644},
	} {
		p := filepath.Join("/etc/ssl", f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.content), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	for dir, mode := range map[string]os.FileMode{"private": 0o710, "closed": 0o700} {
		if err := os.Chmod(filepath.Join("/etc/ssl", dir), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("server.key", "/etc/ssl/link.key"); err != nil {
		t.Fatal(err)
	}
	o := sh(t, `cd /etc/ssl && cat certs/ca.pem private/server.key server.key certs/deep/old.key closed/inside.pem link.key 2>&1; ls private closed; echo done`)
	if strings.Contains(o.stdout, secret) {
		t.Errorf("the sandbox read what only root may in /etc/ssl:\n%s", o.stdout)
	}
	if !strings.Contains(o.stdout, "public-cert") || !strings.Contains(o.stdout, "done") {
		t.Errorf("the sandbox did not read /etc/ssl/certs/ca.pem: %+v", o)
	}
}

// TestEtcEnvironmentNotBound: the host's /etc/environment, where admins
// keep proxy credentials for PAM, is not in a sandbox's /etc (no program
// there reads it), while what a shell reads (/etc/profile) is.
func TestEtcEnvironmentNotBound(t *testing.T) {
	if _, err := os.Stat("/etc/environment"); err != nil {
		t.Skip("this host has no /etc/environment")
	}
	o := sh(t, `test -e /etc/environment && echo present; test -e /etc/profile && echo profile; echo done`)
	if strings.Contains(o.stdout, "present") || !strings.Contains(o.stdout, "done") {
		t.Errorf("/etc/environment is in the sandbox: %+v", o)
	}
}
