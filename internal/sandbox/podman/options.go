package podman

import (
	"log/slog"
	"time"
)

// Options configure the backend. New copies them.
type Options struct {
	// Image is the container image, NAME@sha256:<digest>; a tag is refused.
	Image string
	// Podman is the podman program; empty means "podman" on PATH.
	Podman string
	// Runtime is the OCI runtime Podman uses; empty means "runc", which
	// works where crun refuses the host's cgroup layout.
	Runtime string
	// Executable is the static airlock binary mounted as the container's
	// init; empty means the running binary, which must then be static
	// (built with CGO_ENABLED=0).
	Executable string
	// StateDir is where each call's mounts are staged (a directory made
	// beneath it, root-only); empty means the system's temporary directory.
	StateDir string
	// Logger receives debug records; nil discards.
	Logger *slog.Logger
}

// Defaults where a Limits field is zero, as on the native backend.
const (
	DefaultWall        = 60 * time.Second
	DefaultMemoryBytes = 1 << 30
	DefaultPids        = 256
	DefaultOutputBytes = 16 << 20
	DefaultFileBytes   = 1 << 30
	DefaultTmpBytes    = 64 << 20
	DefaultOpenFiles   = 1024
)
