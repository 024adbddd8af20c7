package inside

import (
	"errors"
	"fmt"
	"os"

	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

// checkJoined checks, when the host left the init to join its cgroups
// (initproto.Config.Join names them), that it did (joinCgroups, or a cgo
// build's constructor): the join was asked for (initproto.JoinEnv) and
// succeeded, and /proc/self/cgroup shows the process in
// the cgroup named name in both the memory and the pids hierarchy, or, in
// a cgroup namespace the spawner rooted at the cgroups it joined
// (cgroupNSRooted), at that namespace's root in both. Without
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
	if cgroupNSRooted {
		return initproto.JoinedIn(b, "")
	}
	return initproto.JoinedIn(b, name)
}

// cgroupNSRooted is set, first thing in Main, when the spawner made the
// init's cgroup namespace in the sandbox's cgroups (initproto.CgroupNSEnv).
var cgroupNSRooted bool

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
