package podman

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlockhq/airlock/internal/sandbox/peruser"
)

// A container's user namespace is made by the runtime as host root, and
// the kernel charges what the container makes of the objects it counts
// per user (inotify instances and watches, fanotify groups and marks,
// user namespaces) to host root as well, up to host root's limits: a
// container took all 128 of host root's inotify instances, and the host's
// own inotify_init failed. The bounds are set, as on the native backend,
// in the container's own user namespace (/proc/sys/user is per
// namespace), which Podman's --sysctl refuses and the init cannot do (it
// has no capability and /proc/sys is read-only). An OCI createContainer
// hook can: the runtime runs it in the container's namespaces, with the
// capabilities of the namespace's root, before /proc/sys is made
// read-only and before the container's process starts. A hook that fails
// fails the container's creation, so a call never runs unbounded.

// hooksDir is the directory, in the backend's staging directory, passed
// to podman run as --hooks-dir. It replaces the host's hooks directories:
// no other hook runs for airlock's containers.
const hooksDir = "hooks"

// hookShell runs the hook's script. It is the host's, resolved in the
// runtime's mount namespace, and readable by the container's root, which
// is not host root (a copy of the airlock binary under the root-only
// staging directory would not be).
const hookShell = "/bin/sh"

// userCountsScript is the hook's script: it writes each bound, skipping a
// knob the kernel lacks (it has nothing of that kind to count), and fails
// if a write fails.
func userCountsScript() string {
	var b strings.Builder
	for _, c := range peruser.Counts {
		fmt.Fprintf(&b, "f=/proc/sys/user/%s; if [ -e $f ]; then echo %d >$f || exit 1; fi\n", c.Name, c.Max)
	}
	return b.String()
}

// ociHook is one hook file of an OCI hooks directory (version 1.0.0).
type ociHook struct {
	Version string `json:"version"`
	Hook    struct {
		Path string   `json:"path"`
		Args []string `json:"args"`
	} `json:"hook"`
	When   map[string]bool `json:"when"`
	Stages []string        `json:"stages"`
}

// writeHooks makes the hooks directory under stage and writes the hook
// that bounds the container's per-user counts into it. It returns the
// directory.
func writeHooks(stage string) (string, error) {
	if _, err := os.Stat(hookShell); err != nil {
		return "", fmt.Errorf("the OCI hook that bounds a container's per-user kernel counts needs %s: %w", hookShell, err)
	}
	dir := filepath.Join(stage, hooksDir)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("making the hooks directory: %w", err)
	}
	var h ociHook
	h.Version = "1.0.0"
	h.Hook.Path = hookShell
	h.Hook.Args = []string{"sh", "-c", userCountsScript()}
	h.When = map[string]bool{"always": true}
	h.Stages = []string{"createContainer"}
	data, err := json.Marshal(&h)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "airlock-user-counts.json"), data, 0o600); err != nil {
		return "", fmt.Errorf("writing the user-counts hook: %w", err)
	}
	return dir, nil
}
