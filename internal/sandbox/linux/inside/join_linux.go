package inside

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

// checkJoined checks, when the host left the init to join its cgroups
// (initproto.Config.Join names them), that it did (joinCgroups, or a cgo
// build's constructor): the join was asked for (initproto.JoinEnv) and
// succeeded, and /proc/self/cgroup shows the process in
// the cgroup named name in both the memory and the pids hierarchy. Without
// that, the sandbox's limits would not hold, so the init refuses to go on.
func checkJoined(name string) error {
	asked, err := earlyJoin()
	if !asked && os.Getenv(initproto.JoinEnv) == initproto.JoinedBySpawn {
		asked = true // before the exec; /proc/self/cgroup shows it below
	}
	switch {
	case name == "" && !asked:
		return nil
	case name == "":
		return errors.New("the init joined cgroups the host did not name")
	case !asked:
		return fmt.Errorf("the host named the sandbox's cgroup %s for the init to join but did not ask it to (no %s=1 in its environment)", name, initproto.JoinEnv)
	case err != nil:
		return fmt.Errorf("joining the sandbox's cgroup %s: %w", name, err)
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return fmt.Errorf("checking the sandbox's cgroups: %w", err)
	}
	return joinedIn(b, name)
}

// joinError is a failed write of 0 to the tasks file at fd, named by its
// hierarchy.
func joinError(fd int, err error) error {
	h := "memory or pids"
	switch fd {
	case initproto.JoinFD:
		h = "memory"
	case initproto.InitTasksFD:
		h = "pids"
	}
	return fmt.Errorf("writing 0 to the tasks file of the sandbox's %s cgroup (fd %d): %w", h, fd, err)
}

// joinedIn reports, from the contents of /proc/self/cgroup, whether the
// process is in the cgroup named name in the memory and pids hierarchies.
func joinedIn(procCgroup []byte, name string) error {
	var missing []string
	for _, want := range []string{"memory", "pids"} {
		found := false
		for line := range bytes.Lines(procCgroup) {
			// hierarchy-ID:controller-list:cgroup-path
			f := strings.SplitN(strings.TrimSuffix(string(line), "\n"), ":", 3)
			if len(f) == 3 && slices.Contains(strings.Split(f[1], ","), want) {
				found = strings.HasSuffix(f[2], "/"+name)
				break
			}
		}
		if !found {
			missing = append(missing, want)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the init is not in the sandbox's cgroup %s of the %s hierarchy, as it should be once it joined", name, strings.Join(missing, " and "))
	}
	return nil
}
