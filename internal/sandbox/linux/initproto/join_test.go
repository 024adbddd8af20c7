package initproto

import (
	"strings"
	"testing"
)

// TestJoinedIn reads /proc/self/cgroup as cgroup v1 and hybrid hosts
// write it.
func TestJoinedIn(t *testing.T) {
	const in = "12:pids:/airlock-1-2\n4:memory:/process_api/x/airlock-1-2\n1:cpu,cpuacct:/\n0::/\n"
	if err := JoinedIn([]byte(in), "airlock-1-2"); err != nil {
		t.Errorf("in both: %v", err)
	}
	// In a cgroup namespace rooted at the cgroups joined, name "".
	if err := JoinedIn([]byte("12:pids:/\n4:memory:/\n1:cpu,cpuacct:/../..\n"), ""); err != nil {
		t.Errorf("rooted in both: %v", err)
	}
	if err := JoinedIn([]byte("12:pids:/\n4:memory:/../airlock-1-2\n"), ""); err == nil || !strings.Contains(err.Error(), "not rooted at its cgroups of the memory hierarchy") {
		t.Errorf("memory not rooted: %v, want an error naming the memory hierarchy", err)
	}
	for name, c := range map[string]struct{ in, want string }{
		"memory outside": {"12:pids:/airlock-1-2\n4:memory:/process_api/x\n", "of the memory hierarchy"},
		"pids outside":   {"12:pids:/\n4:memory:/airlock-1-2\n", "of the pids hierarchy"},
		"a longer name":  {"12:pids:/xairlock-1-2\n4:memory:/airlock-1-2x\n", "of the memory and pids hierarchy"},
		"no hierarchies": {"0::/airlock-1-2\n", "of the memory and pids hierarchy"},
	} {
		err := JoinedIn([]byte(c.in), "airlock-1-2")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, c.want)
		}
	}
}
