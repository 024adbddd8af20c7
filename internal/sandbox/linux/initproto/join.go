package initproto

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// JoinedIn reports, from the contents of a process's /proc/PID/cgroup
// (cgroup v1), whether the process is in the cgroup named name in the
// memory and pids hierarchies; name "" asks for the root of its cgroup
// namespace in both (one rooted at the cgroups it joined).
func JoinedIn(procCgroup []byte, name string) error {
	var missing []string
	for _, want := range []string{"memory", "pids"} {
		found := false
		for line := range bytes.Lines(procCgroup) {
			// hierarchy-ID:controller-list:cgroup-path
			f := strings.SplitN(strings.TrimSuffix(string(line), "\n"), ":", 3)
			if len(f) == 3 && slices.Contains(strings.Split(f[1], ","), want) {
				found = name == "" && f[2] == "/" || name != "" && strings.HasSuffix(f[2], "/"+name)
				break
			}
		}
		if !found {
			missing = append(missing, want)
		}
	}
	if len(missing) > 0 && name == "" {
		return fmt.Errorf("the init's cgroup namespace is not rooted at its cgroups of the %s hierarchy, as the host said it made it", strings.Join(missing, " and "))
	}
	if len(missing) > 0 {
		return fmt.Errorf("the init is not in the sandbox's cgroup %s of the %s hierarchy, as it should be once it joined", name, strings.Join(missing, " and "))
	}
	return nil
}
