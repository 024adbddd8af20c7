package linux

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// v2Root is the host's cgroup v2 mount point, where a root test may make
// cgroups of its own; the test is skipped without either.
func v2Root(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a test cgroup under the cgroup v2 root")
	}
	mounts, err := cgroupMounts()
	if err != nil {
		t.Fatal(err)
	}
	root, ok := mounts[""]
	if !ok {
		t.Skip("no cgroup v2 hierarchy mounted")
	}
	return root
}

// TestV2HostEnablesControllers drives v2Host on the host's real cgroup v2
// hierarchy, in a test cgroup under its root, with one controller the
// hierarchy has standing in for memory and pids (on a hybrid host such as
// this project's, memory and pids belong to v1 and v2 has only hugetlb).
// It checks the "no internal processes" handling: a broker alone in its
// cgroup moves itself into airlock-broker and enables the controller; one
// that shares its cgroup, or may not move, is told why and stays put; a
// controller that is not delegated is named. The broker is a child process
// (TestV2HostChild) placed in the test cgroup with CLONE_INTO_CGROUP.
func TestV2HostEnablesControllers(t *testing.T) {
	root := v2Root(t)
	ctrl := testController(t, root)
	dir := filepath.Join(root, "airlock-v2test-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, d := range []string{filepath.Join(dir, brokerLeaf), dir} {
			if err := os.Remove(d); err != nil && !os.IsNotExist(err) {
				t.Errorf("removing %s: %v", d, err)
			}
		}
	})
	for _, tc := range []struct {
		name      string
		want      string // controller asked for
		mayMove   bool
		neighbour bool // another process shares the cgroup
		ok        bool
		reason    string
		cgroup    string // the broker's cgroup afterwards, under dir
	}{
		{"not delegated", "airlock-no-such", true, false, false, "the airlock-no-such controller is not delegated", ""},
		{"may not move", ctrl, false, false, false, "holds processes (1)", ""},
		{"shares its cgroup", ctrl, true, true, false, "holds processes (2)", ""},
		{"alone", ctrl, true, false, true, "", "/" + brokerLeaf},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.neighbour {
				n := exec.Command("/bin/sleep", "987650")
				startIn(t, dir, n)
				defer func() { n.Process.Kill(); n.Wait() }()
			}
			got := v2Child(t, dir, tc.want, tc.mayMove)
			if got.OK != tc.ok || !strings.Contains(got.Reason, tc.reason) || got.Cgroup != tc.cgroup {
				t.Fatalf("v2Host = %+v; want ok %v, a reason with %q, broker in %q", got, tc.ok, tc.reason, tc.cgroup)
			}
			enabled, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
			if has := contains(strings.Fields(string(enabled)), ctrl); has != tc.ok {
				t.Errorf("subtree_control %q: %s enabled %v, want %v", enabled, ctrl, has, tc.ok)
			}
			if _, err := os.Stat(filepath.Join(dir, brokerLeaf)); err == nil != tc.ok {
				t.Errorf("broker leaf exists: %v, want %v", err == nil, tc.ok)
			}
		})
	}
}

// testController returns a controller of the v2 hierarchy at root that
// its direct children can use, enabling it at the root (and disabling it
// again after the test) when none is enabled there.
func testController(t *testing.T, root string) string {
	t.Helper()
	avail, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
	if err != nil {
		t.Fatal(err)
	}
	enabled, err := os.ReadFile(filepath.Join(root, "cgroup.subtree_control"))
	if err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(string(enabled)); len(f) > 0 {
		return f[0]
	}
	f := strings.Fields(string(avail))
	if len(f) == 0 {
		t.Skip("the cgroup v2 hierarchy has no controller to exercise")
	}
	if err := writeFile(filepath.Join(root, "cgroup.subtree_control"), "+"+f[0]); err != nil {
		t.Skipf("cannot enable %s at the cgroup v2 root: %v", f[0], err)
	}
	t.Cleanup(func() { _ = writeFile(filepath.Join(root, "cgroup.subtree_control"), "-"+f[0]) })
	return f[0]
}

// startIn starts cmd in the cgroup dir.
func startIn(t *testing.T, dir string, cmd *exec.Cmd) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s in %s: %v", cmd.Path, dir, err)
	}
}

// v2Result is what TestV2HostChild reports.
type v2Result struct {
	OK     bool
	Reason string
	Cgroup string // the child's v2 cgroup afterwards, relative to dir
}

// v2Child runs TestV2HostChild in dir and returns its report.
func v2Child(t *testing.T, dir, want string, mayMove bool) v2Result {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestV2HostChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "AIRLOCK_V2_CHILD="+dir, "AIRLOCK_V2_WANT="+want, "AIRLOCK_V2_MOVE="+strconv.FormatBool(mayMove))
	var stdout strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	startIn(t, dir, cmd)
	err := cmd.Wait()
	out := stdout.String()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if j, ok := strings.CutPrefix(line, "v2result "); ok {
			var r v2Result
			if err := json.Unmarshal([]byte(j), &r); err != nil {
				t.Fatal(err)
			}
			return r
		}
	}
	t.Fatalf("child printed no result:\n%s", out)
	return v2Result{}
}

// TestV2HostChild is the broker half of TestV2HostEnablesControllers.
func TestV2HostChild(t *testing.T) {
	dir := os.Getenv("AIRLOCK_V2_CHILD")
	if dir == "" {
		t.Skip("runs only as the child of TestV2HostEnablesControllers")
	}
	h, why := v2Host(dir, os.Getenv("AIRLOCK_V2_MOVE") == "true", []string{os.Getenv("AIRLOCK_V2_WANT")})
	self, err := selfCgroups()
	if err != nil {
		t.Fatal(err)
	}
	mounts, _ := cgroupMounts()
	rel := strings.TrimPrefix(filepath.Join(mounts[""], self[""]), dir)
	r, _ := json.Marshal(v2Result{OK: why == "" && h.version == 2 && h.v2 == dir, Reason: why, Cgroup: rel})
	os.Stdout.Write(append(append([]byte("v2result "), r...), '\n'))
}
