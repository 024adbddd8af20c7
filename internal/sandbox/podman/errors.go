package podman

import (
	"bytes"
	"strconv"
	"strings"
)

// A RunError is Podman failing to run the container (exit 125-127, a
// missing image or runtime): the tool never ran. It names the fix.
type RunError struct {
	Code   int    // podman's exit status
	Reason string // what podman said, first line
	Fix    string
}

func (e *RunError) Error() string {
	s := "the podman backend could not run the container"
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	if e.Fix != "" {
		s += "; to fix: " + e.Fix
	}
	return s
}

// podmanFailed tells Podman's own failures from the payload's exit: the
// runner never exits 125-127, so in tool mode those are Podman's; a
// command's 126 or 127 are Podman's only when Podman said so on stderr.
func podmanFailed(code int, tool bool, stderr []byte) bool {
	switch {
	case code == 125:
		return true
	case code == 126 || code == 127:
		return tool || bytes.HasPrefix(stderr, []byte("Error: ")) || bytes.Contains(stderr, []byte("\nError: "))
	}
	return false
}

// runError explains a Podman failure from what it printed.
func runError(code int, stderr []byte) *RunError {
	msg := string(stderr)
	if i := strings.Index(msg, "Error: "); i >= 0 {
		msg = msg[i+len("Error: "):]
	}
	msg, _, _ = strings.Cut(strings.TrimSpace(msg), "\n")
	e := &RunError{Code: code, Reason: msg}
	low := strings.ToLower(msg)
	switch {
	case strings.Contains(low, "image not known") || strings.Contains(low, "no such image") || strings.Contains(low, "unable to find"):
		e.Fix = "load the image on this host (podman pull NAME@sha256:..., or podman load / podman import), then pin it by the digest podman reports"
	case strings.Contains(low, "crun") && strings.Contains(low, "cgroup"):
		e.Fix = "crun refuses this host's cgroup layout: use runc (apt-get install runc; airlock passes --runtime runc)"
	case strings.Contains(low, "oci runtime") && strings.Contains(low, "not found") || strings.Contains(low, "executable file not found in $path"):
		e.Fix = "install the OCI runtime (apt-get install runc)"
	default:
		e.Fix = "see podman's message; check `airlock doctor`"
	}
	if msg == "" {
		e.Reason = "podman exited with status " + strconv.Itoa(code)
	}
	return e
}
