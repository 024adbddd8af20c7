// Package native is the one place that knows airlock's native sandbox: it
// builds the platform's native backend (Linux namespaces) and runs the
// hidden modes a sandbox re-executes the airlock binary in (the sandbox's
// init, the Podman container's init, the unsandboxed runner). The Go API,
// the CLI and the test harness (internal/sandboxtest) all go through it.
package native

import (
	"os"

	"github.com/airlockhq/airlock/internal/initmode"
	"github.com/airlockhq/airlock/internal/runner"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
	podinside "github.com/airlockhq/airlock/internal/sandbox/podman/inside"
)

// Options configure the native backend. A nil *Options uses the defaults.
type Options struct {
	// StateDir is where the backend journals the placeholders it creates
	// in users' trees, so a later backend over the same directory removes
	// those a dead one left; empty keeps no journal.
	StateDir string
	// Executable is the binary each sandbox re-executes in init mode;
	// empty means airlock-init beside the running binary when it is of
	// the same build (see linux.InitCommand), else the running one.
	Executable string
	// OptionalCgroups lets the backend start where this user may manage no
	// cgroup (its report then lists the memory and process limits as not
	// enforced); by default the backend decides by the host.
	OptionalCgroups bool
}

// New returns the native sandbox backend of this platform, or an error
// wrapping sandbox.ErrUnsupported where there is none.
func New(opts *Options) (sandbox.Backend, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	return newBackend(&o)
}

// RunHiddenMode plays the role the process was started in, when it was
// started in one of airlock's hidden modes, and exits; otherwise it returns
// at once. A program that builds sandboxes calls it first in main.
func RunHiddenMode() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case runner.Mode:
		os.Exit(runner.Main(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	case podinside.Mode:
		os.Exit(podinside.Main(os.Args[2:], runner.RunContext))
	case initproto.Arg:
		os.Exit(initmode.Main())
	}
}
