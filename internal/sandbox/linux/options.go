package linux

import (
	"log/slog"
	"time"
)

// Options configure the backend. A nil *Options means all defaults; New
// copies it.
type Options struct {
	// Logger receives debug records (setup phases, teardown); nil discards.
	Logger *slog.Logger
	// CgroupParent, when set, is the cgroup path (relative to each
	// hierarchy's root) under which sandbox cgroups are made, instead of
	// the broker's own cgroup.
	CgroupParent string
	// Cgroups says whether a Run without cgroup limits is refused.
	Cgroups CgroupPolicy
	// Executable is the airlock binary to run as the init; empty means
	// the separately built init beside the running binary when it is of
	// the same build and as protected (InitCommand), else /proc/self/exe.
	// Tests point it at the test binary.
	Executable string
	// Args are the arguments that select the init mode; nil means
	// ["__sandbox"].
	Args []string
	// PoolSize, when positive, keeps that many warm sandboxes of each
	// tool-mode shape from New until Close (see Backend.Pool); zero
	// leaves the pool to holders of Backend.Pool.
	PoolSize int
	// StateDir, when set, is where the backend journals the placeholders
	// it creates in users' trees (StateDir/.placeholders/, one file per
	// process), so that a later backend over the same StateDir removes
	// those a process that died (kill -9) left behind. Empty: no journal.
	StateDir string
	// DiskFloor, when positive, is the free space (bytes) the disk guard
	// keeps on every file system a call may write, instead of 1% of its
	// size within 256 MiB and 4 GiB (see disk_linux.go).
	DiskFloor int64
}

// CgroupPolicy says whether New fails when the host gives the broker no
// cgroup for the memory and process limits. Whatever the policy, a Run
// without cgroups is refused unless its Spec sets Limits.AllowUnenforced.
type CgroupPolicy int

const (
	// CgroupsDefault requires cgroups when the broker runs as root (which
	// can always create them), and is CgroupsOptional otherwise.
	CgroupsDefault CgroupPolicy = iota
	// CgroupsRequired makes New fail without cgroups (fail closed).
	CgroupsRequired
	// CgroupsOptional lets New succeed without cgroups. Each Run is then
	// refused with a MissingFeatureError that names the limits and how to
	// delegate a cgroup, unless its Spec sets Limits.AllowUnenforced: then
	// it runs with memory bounded by RLIMIT_AS only and processes by
	// RLIMIT_NPROC only, and Result.Isolation lists "cgroups" under Missing
	// and "memory" and "processes" under Unenforced.
	CgroupsOptional
)

// Defaults applied where a Limits field is zero.
const (
	DefaultWall        = 60 * time.Second
	DefaultMemoryBytes = 1 << 30
	DefaultPids        = 256
	DefaultOutputBytes = 16 << 20
	DefaultFileBytes   = 1 << 30
	DefaultTmpBytes    = 64 << 20
	DefaultOpenFiles   = 1024
)
