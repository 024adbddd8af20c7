//go:build linux

package egress

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// A grant may reach a private host by a name of one label that the host's
// /etc/hosts gives ("localhost", a compose service's "db"): the refusal of
// --allow-host localhost:PORT says to list it under network.private. The
// proxy resolves every name as a rooted one ("db.") to keep the search list
// out, and Go's resolver looks a rooted name of one label up in /etc/hosts
// under another key than the file's "db", so such a name never resolved:
// "name did not resolve". It must resolve from /etc/hosts, and still never
// through the search list ("nothere" must not become nothere.corp.internal).
const singleLabelChildEnv = "AIRLOCK_TEST_SINGLE_LABEL_CHILD"

func TestDefaultResolverFindsOneLabelHostsNames(t *testing.T) {
	if os.Getenv(singleLabelChildEnv) == "1" {
		singleLabelChild(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for a mount and network namespace")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDefaultResolverFindsOneLabelHostsNames$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), singleLabelChildEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWNET}
	out, err := cmd.CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Skipf("cannot start a child in new namespaces: %v", err)
		}
		t.Fatalf("child failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestDefaultResolverFindsOneLabelHostsNames") {
		t.Fatalf("child did not pass:\n%s", out)
	}
}

func singleLabelChild(t *testing.T) {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		t.Fatalf("making mounts private: %v", err)
	}
	dir := t.TempDir()
	for name, text := range map[string]string{
		"resolv.conf": "nameserver 127.0.0.1\nsearch corp.internal\noptions ndots:5 attempts:1 timeout:2\n",
		"hosts":       "127.0.0.1 localhost\n10.1.2.3 db\n10.1.2.4 svc.lan\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount(p, "/etc/"+name, "", unix.MS_BIND, ""); err != nil {
			t.Fatalf("bind-mounting %s: %v", name, err)
		}
	}
	loUp(t)
	dns := serveDNS(t, map[string]netip.Addr{
		"nothere.corp.internal.": netip.MustParseAddr("93.184.216.99"),
		"db.corp.internal.":      netip.MustParseAddr("93.184.216.98"),
	})
	r := newRootedResolver()
	ctx := context.Background()
	for name, want := range map[string]string{"localhost": "127.0.0.1", "db": "10.1.2.3", "svc.lan": "10.1.2.4"} {
		got, err := r.LookupNetIP(ctx, "ip", name)
		if err != nil || !slices.ContainsFunc(got, func(a netip.Addr) bool { return a.Unmap() == netip.MustParseAddr(want) }) {
			t.Errorf("LookupNetIP(%q) = %v, %v; want %s (from /etc/hosts)", name, got, err, want)
		}
	}
	if got, err := r.LookupNetIP(ctx, "ip", "nothere"); err == nil {
		t.Errorf("LookupNetIP(nothere) = %v, want an error (it is in no /etc/hosts, and the search list must not expand it)", got)
	}
	for _, q := range dns.queries() {
		if strings.HasSuffix(q, ".corp.internal.") {
			t.Errorf("the resolver asked for %q, a name expanded by the search list", q)
		}
	}
}
