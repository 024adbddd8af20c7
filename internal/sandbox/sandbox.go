// Package sandbox defines what a sandbox backend is asked to run (Spec), what
// it reports back (Result), and what it enforces (Report). Each backend lives
// in its own subpackage and builds a fresh sandbox for every Spec it runs.
package sandbox

import (
	"context"
	"errors"
	"io"
	"syscall"
	"time"

	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/wire"
)

// SeparateInitName is the file name of the separately built sandbox init
// (cmd/airlock-init) the native backend runs when it lies beside the
// running airlock binary and is of its build. Like that binary, a session
// keeps it read-only (held while missing) inside read-write trees: a
// sandbox that could put one there would choose the next sandboxes' init.
const SeparateInitName = "airlock-init"

// ErrUnsupported is returned by a backend that cannot run on this host at all
// (for example the Linux backend on macOS).
var ErrUnsupported = errors.New("sandbox backend not supported on this platform")

// A MissingFeatureError says which isolation feature a Spec needs that this
// host lacks, and how to provide it. Backends return it instead of running
// with weaker isolation.
type MissingFeatureError struct {
	Feature string // e.g. "user namespaces"
	Reason  string // what the host reported
	Fix     string // how to provide it, e.g. "sysctl -w kernel.unprivileged_userns_clone=1"
	// Unenforceable, when what is missing is the means to enforce limits
	// (a cgroup), names those limits: Limits.AllowUnenforced runs the
	// Spec anyway.
	Unenforceable []wire.Limit `json:",omitempty"`
}

func (e *MissingFeatureError) Error() string {
	s := "this host lacks " + e.Feature
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	if e.Fix != "" {
		s += "; to fix: " + e.Fix
	}
	return s
}

// Mount is one path made visible inside the sandbox.
type Mount struct {
	// Source is a host path, already fully resolved (no symlink components).
	// The backend opens it without following symlinks and refuses it if it
	// has changed into a symlink since.
	Source string
	// Target is the path inside the sandbox; empty means the same as Source.
	Target string
	// Writable mounts read-write; otherwise read-only.
	Writable bool
}

// Limits bound one sandbox. Zero means the backend's default, never "none".
//
// A backend that cannot enforce MemoryBytes or Pids on this host (the Linux
// backend without a cgroup it may manage) refuses the Spec with a
// MissingFeatureError, unless AllowUnenforced accepts that; the Result then
// names those limits in Isolation.Unenforced.
type Limits struct {
	Wall        time.Duration // wall time; at the deadline every process is killed
	MemoryBytes int64         // memory, including tmpfs pages written by the sandbox
	Pids        int           // processes and threads
	OutputBytes int64         // bytes read from stdout (and, separately, stderr)
	FileBytes   int64         // RLIMIT_FSIZE
	TmpBytes    int64         // size of the private /tmp
	OpenFiles   int           // RLIMIT_NOFILE
	// AllowUnenforced runs the Spec even when the host cannot enforce the
	// memory or process limit (see Report.Limits), instead of refusing it.
	AllowUnenforced bool
}

// Names of limits, as Result.Limit, Result.LimitsHit, Isolation.Unenforced
// and Report.Limits use them: the wire contract's, defined there once.
const (
	LimitTime      = wire.LimitTime
	LimitMemory    = wire.LimitMemory
	LimitProcesses = wire.LimitProcesses
	LimitOutput    = wire.LimitOutput
	LimitFileSize  = wire.LimitFileSize
	LimitTmp       = wire.LimitTmp
	LimitDisk      = wire.LimitDisk
)

// Hits are the limits one run hit, as a backend found them.
type Hits struct{ Time, Memory, Processes, Output, Disk bool }

// Apply sets r.LimitsHit from h, in the order time, memory, processes,
// output, disk, and r.Limit: the disk guard, the output cap or the
// deadline when the sandbox was killed for it, else memory or processes
// when hit by a payload that did not finish normally (r's exit code and
// signal tell).
func (h Hits) Apply(r *Result) {
	r.LimitsHit = nil
	for _, n := range []struct {
		hit  bool
		name wire.Limit
	}{{h.Time, LimitTime}, {h.Memory, LimitMemory}, {h.Processes, LimitProcesses}, {h.Output, LimitOutput}, {h.Disk, LimitDisk}} {
		if n.hit {
			r.LimitsHit = append(r.LimitsHit, n.name)
		}
	}
	finished := r.ExitCode == 0 && r.Signal == 0
	switch {
	case h.Disk:
		r.Limit = LimitDisk
	case h.Output:
		r.Limit = LimitOutput
	case h.Time:
		r.Limit = LimitTime
	case finished:
		r.Limit = ""
	case h.Memory:
		r.Limit = LimitMemory
	case h.Processes:
		r.Limit = LimitProcesses
	default:
		r.Limit = ""
	}
}

// Network says what the sandbox can reach.
type Network struct {
	// ProxySocket, when set, is a Unix socket on the host where the egress proxy
	// listens for this sandbox alone. Inside, a forwarder on 127.0.0.1:ProxyPort
	// bridges to it. When empty the sandbox has loopback only.
	ProxySocket string
	ProxyPort   int
	// OnDecision, when set, receives the decisions of an egress proxy the
	// backend runs on its own side instead of reaching ProxySocket (remote
	// hands run their own proxy), so they reach the broker's audit log
	// like those of its own proxy.
	OnDecision func(egress.Decision)
	// Hosts and Private are the grant's network.hosts and network.private
	// entries, in normal form, for a backend that runs its own egress
	// proxy (remote hands): it must let the call reach no more than they
	// allow.
	Hosts, Private []string
}

// Spec is everything a backend needs to run one call.
type Spec struct {
	// Mounts are the grant's paths. System directories are the backend's own.
	Mounts []Mount
	// Masks are paths inside granted trees hidden from the sandbox (denied
	// sub-paths): an empty read-only directory or file is mounted over each.
	Masks []string
	// ReadOnly are paths inside writable mounts forced read-only (protected
	// paths such as .git/hooks), whether or not they exist yet.
	ReadOnly []string
	// ReadOnlyDirs are the ReadOnly paths that name directories (.vscode,
	// .git/hooks): when missing, they are held as empty read-only
	// directories. Other missing ReadOnly paths, and missing Masks, are
	// held as empty read-only files, so the sandbox can create neither a
	// file nor a directory of that name.
	ReadOnlyDirs []string
	Network      Network
	Limits       Limits
	// Env is the complete environment ("K=V"); nothing is inherited.
	Env []string
	// Cwd is the working directory inside the sandbox.
	Cwd string

	// Command is the program and arguments to run (airlock exec). When empty
	// the backend runs the airlock runner, which reads one wire frame from Stdin.
	Command []string
	// Stdin, Stdout and Stderr are the sandbox's standard streams. A nil Stdin
	// reads as empty; nil Stdout/Stderr discard. Output beyond
	// Limits.OutputBytes is not copied, and the sandbox is killed.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// TTY asks for a pseudo-terminal for the sandbox, relayed to Stdin/Stdout;
	// the backend never hands the host's terminal to the sandbox.
	TTY bool
	// TTYRows and TTYCols are the initial terminal size when TTY is set.
	TTYRows, TTYCols uint16
	// StderrApart, with TTY, keeps the sandbox's stderr off its terminal:
	// a pipe to Stderr, for a caller whose own stderr is no terminal
	// (2>errors.log). A backend that cannot (Podman) sends it to the
	// terminal with the rest.
	StderrApart bool
	// Resize, when set with TTY, carries later terminal sizes: each one
	// received while the sandbox runs is applied to its pseudo-terminal
	// (the sandbox gets SIGWINCH). The caller owns the channel; the
	// backend stops reading it when Run returns.
	Resize <-chan TTYSize
	// Stop, when closed, asks the backend to send SIGTERM to every process
	// of the sandbox (the payload and anything it started, double-forked
	// daemons included where the backend can reach them). The sandbox then
	// ends on its own, or when ctx is cancelled. Nil never stops. A stop
	// asked for before the payload starts is delivered when it starts.
	Stop <-chan struct{}
	// Signal, when set, carries signals for the command of a Spec with a
	// Command (a tool-mode Spec is stopped with Stop), the way a terminal
	// or a supervisor signals a process it runs: SIGINT and SIGHUP go to
	// the command, SIGTERM to every process of the sandbox (as Stop), and
	// SIGKILL ends the sandbox at once (Result.Signal is then SIGKILL).
	// Other signals are ignored. The backend reads it from the moment the
	// payload starts, so a signal sent before is delivered then, until Run
	// returns.
	Signal <-chan syscall.Signal
}

// TTYSize is a terminal size in character cells.
type TTYSize struct{ Rows, Cols uint16 }

// Result is how a sandbox ended.
type Result struct {
	// ExitCode is the exit status of the runner or command, or -1 if it was
	// killed by a signal.
	ExitCode int
	// Signal is the signal that killed it, or 0.
	Signal int
	// Limit names the limit that ended it, or "": "time" or "output" when
	// the backend killed the sandbox for it; "memory" or "processes" when
	// that limit was hit and the payload did not finish normally (it was
	// killed by a signal or exited non-zero). A time-out is "time" even when
	// another limit was hit too.
	Limit wire.Limit
	// LimitsHit names every limit the sandbox hit, in the order time,
	// memory, processes, output: a kill at the deadline, an OOM kill, a
	// fork refused at the process limit, output past the cap. Limit, when
	// set, is among them; a limit hit by a payload that went on to finish
	// is listed here only.
	LimitsHit []wire.Limit
	// OutputTruncated reports that stdout or stderr passed Limits.OutputBytes.
	OutputTruncated bool
	// Isolation is the isolation that actually ran.
	Isolation wire.Isolation
	// Setup is the time from the start of Run until the payload started.
	Setup time.Duration
	// Duration is the wall time of the whole run.
	Duration time.Duration
	// CPU is the CPU time (user and system) the sandbox's processes used,
	// and PeakMemory the most memory it held at once, where the backend
	// measures them (zero otherwise).
	CPU        time.Duration
	PeakMemory int64
	// Remote names the remote hands that ran the sandbox (endpoint and
	// identity); empty for a sandbox on this host.
	Remote string
}

// Backend builds a fresh sandbox for each Spec. Implementations are safe for
// concurrent use; each Run is independent.
type Backend interface {
	// Run runs spec to completion. Cancelling ctx kills the sandbox. A non-nil
	// error means the sandbox could not be built or torn down (Result is then
	// nil); an exit code or signal is a Result, not an error.
	Run(ctx context.Context, spec *Spec) (*Result, error)
	// Report says what this backend enforces on this host.
	Report() Report
}

// Feature is one isolation feature and whether this host provides it.
type Feature struct {
	Name      string `json:"name"`      // e.g. "user namespaces"
	Available bool   `json:"available"` // the host provides it
	Required  bool   `json:"required"`  // the default grant needs it
	Detail    string `json:"detail"`    // version, mode, or why it is missing
	Fix       string `json:"fix,omitempty"`
}

// LimitStatus says whether a backend enforces one kind of limit on this host.
type LimitStatus struct {
	Limit    wire.Limit `json:"limit"`    // one of the Limit constants
	Enforced bool       `json:"enforced"` // the backend holds the sandbox to it
	Detail   string     `json:"detail"`   // how it is enforced, or why it cannot be
	Fix      string     `json:"fix,omitempty"`
}

// Report is what a backend enforces on this host, for `airlock doctor`.
type Report struct {
	Backend string `json:"backend"`
	// Unsandboxed marks a backend that runs calls without isolation (plain
	// child processes with the host's files and network); results and
	// labels say so, and nothing may assume a namespace confines them.
	Unsandboxed bool          `json:"unsandboxed,omitempty"`
	Features    []Feature     `json:"features"`
	Limits      []LimitStatus `json:"limits,omitempty"`
}

// Unenforced names the limits the backend cannot enforce on this host.
func (r Report) Unenforced() []wire.Limit {
	var out []wire.Limit
	for _, l := range r.Limits {
		if !l.Enforced {
			out = append(out, l.Limit)
		}
	}
	return out
}

// Ready reports whether every required feature is available.
func (r Report) Ready() bool {
	for _, f := range r.Features {
		if f.Required && !f.Available {
			return false
		}
	}
	return true
}

// ErrLost is returned by a backend whose sandbox was lost with the call in
// it (remote hands that crashed or became unreachable) when the call may
// not run again: whether it took effect is unknown.
var ErrLost = errors.New("the sandbox was lost while the call ran")
