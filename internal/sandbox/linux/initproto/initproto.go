// Package initproto is the protocol between the Linux backend's host side
// (package linux) and the sandbox init (package inside): the file
// descriptors the init inherits, the configuration the host sends and the
// status lines the init sends back. Both sides import it; it holds data, and
// the one rule both sides apply to it: which mount holds a path (Holding).
//
// The exchange, in order (the host is the broker process, the init is
// `airlock __sandbox`, PID 1 of the new PID namespace):
//
//	host                                         init (PID 1)
//	 |  clone(NEWUSER|NEWNS|NEWPID|NEWNET|...)     |
//	 |  exec /proc/self/fd/5 (sealed binary) ----->|  close fd 5, CLOEXEC fds > 2
//	 |  write pid into the sandbox cgroups,        |  (cgroup v1, JoinEnv: join them through
//	 |  unless Config.Join (the init joins them)   |  fds 8-9, before the Go runtime starts)
//	 |                                             |  read(fd 3) blocks
//	 |  write Config JSON on fd 3 ---------------->|  decode Config
//	 |  (close fd 3 unless Config.Claim)           |  grant mounts, /dev, /proc, lo, rlimits,
//	 |                                             |  empty bounding and ambient sets,
//	 |                                             |  securebits, no_new_privs
//	 |  -- only with Config.Claim (a warm sandbox waiting in the pool) --
//	 |<------------- Status{Staged} on fd 4 -------|  read(fd 3) blocks, capabilities kept
//	 |  ... the sandbox waits; no placeholder ...  |
//	 |  a call takes it: create the placeholders   |
//	 |  write Claim JSON on fd 3, close ---------->|  decode Claim
//	 |  -----------------------------------------------
//	 |                                             |  masks, protected paths, pins,
//	 |                                             |  pivot_root, clear all capabilities,
//	 |                                             |  Landlock, seccomp
//	 |<------------- Status{Ready} on fd 4 --------|  (or Status{Error}, then exit 125)
//	 |  copy stdout/stderr, enforce limits         |  run the payload (in the payload cgroup,
//	 |                                             |  fds 6-8), reap, forward signals
//	 |<------------- Status{Exit} on fd 4 ---------|  then exit (tool mode: after killing
//	 |                                             |  the rest and closing fds 0-2)
//	 |  wait, read cgroup events, remove cgroups   |
//
// The host kills the init (SIGKILL, which ends the PID namespace) when the
// call's wall time runs out. As a backstop for a host that does not (its
// process stopped by job control), the init, given the Deadline in the
// Config or the Claim, sends Status{Expired} ExpireGrace after it and
// exits, which ends the PID namespace the same way. Its disk guard
// (Config.DiskGuard) is the backstop of the host's the same way:
// Status{Disk}, then exit.
//
// The claim exists so that a warm sandbox holds nothing in the user's tree
// while it waits: the placeholders for missing protected and denied paths
// (empty .bashrc, .vscode, .env, ...) are made by the host only once a call
// has taken the sandbox, and the init mounts over them, and gives up its
// last capabilities, only then. Everything fixed by the grant alone (the grant
// mounts, the system directories, /dev, /proc) is built ahead of time.
//
// Every status is one JSON object on its own line.
package initproto

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// File descriptors of the init, as set up by the host.
const (
	ConfigFD = 3 // read end of the config pipe
	StatusFD = 4 // write end of the status pipe
	ExeFD    = 5 // the sealed airlock binary (exe_linux.go; closed at once)

	// With a payload cgroup (Config.PayloadPids set: cgroup v1), the host
	// passes three files it opened for writing, so the init can start the
	// command in a cgroup of its own below the sandbox's: the payload's
	// tasks and pids.max, and the tasks of the sandbox's pids cgroup.
	// Otherwise these descriptors are closed.
	PayloadTasksFD = 6
	PayloadPidsFD  = 7
	InitTasksFD    = 8
	// JoinFD, with JoinEnv in the init's environment (cgroup v1), is the
	// tasks file of the sandbox's memory cgroup, opened for writing by the
	// host; InitTasksFD is then that of its pids cgroup. The init's C
	// constructor (a build with cgo) writes 0 (the writing thread) to both
	// before the Go runtime starts, while the process has its one thread,
	// so the whole init joins its cgroups and every thread made later is
	// born in them; a build without cgo has every thread write it, first
	// thing in Main. The host then writes no pid into cgroup.procs:
	// cgroup v1 moves a process written there under a lock whose taking
	// waits for an RCU grace period (milliseconds, holding cgroup_mutex
	// for the whole system), which moving the writing thread itself skips.
	// The join closes it, so it is above LastFD: a descriptor found there
	// later was inherited, and is closed.
	JoinFD = 9
	// LastFD is the highest descriptor of the protocol the init's Go side
	// uses.
	LastFD = InitTasksFD
)

// JoinEnv, set to 1 in the init's environment, asks its constructor to
// join the sandbox's cgroups through JoinFD and InitTasksFD. It is a
// variable of the environment, not a descriptor's presence, because a
// descriptor the broker inherited without close-on-exec may sit at any
// number.
const JoinEnv = "AIRLOCK_INIT_JOIN"

// JoinedBySpawn, as JoinEnv's value, says the host's spawner joined the
// init to its cgroups before its exec, through the same descriptors, while
// it was one thread: the init only checks that it is in them.
const JoinedBySpawn = "spawned"

// CgroupNSEnv, set to RootedBySpawn in the init's environment, says the
// host's spawner, with the init already in the sandbox's cgroups and one
// thread, made the cgroup namespace the init runs in, rooted at them: the
// one made at the clone is rooted at the broker's cgroups, and the init
// makes a new one itself, on every thread of its runtime, only without it.
// /proc/self/cgroup then shows "/" for the init's cgroups.
const CgroupNSEnv = "AIRLOCK_INIT_CGROUPNS"

// RootedBySpawn is CgroupNSEnv's value.
const RootedBySpawn = "spawned"

// ProxyMount is where the proxy socket appears inside the sandbox.
const ProxyMount = "/run/airlock/proxy.sock"

// Arg is the hidden argument that puts the airlock binary in init mode.
const Arg = "__sandbox"

// Mount is one grant path, as in sandbox.Mount, with Target always set.
type Mount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	Writable bool   `json:"writable,omitempty"`
}

// Config is everything the init needs to build the sandbox.
type Config struct {
	Mounts   []Mount  `json:"mounts,omitempty"`
	Masks    []string `json:"masks,omitempty"`
	ReadOnly []string `json:"read_only,omitempty"`
	// ReadOnlyDirs are the ReadOnly paths that, when missing, are held as
	// empty directories; other missing ReadOnly and Masks paths are held
	// as empty files.
	ReadOnlyDirs []string `json:"read_only_dirs,omitempty"`
	// Placeholders are the sandbox paths of the placeholders the host made
	// for this sandbox; the init lists them at inside.PlaceholderList.
	Placeholders []string `json:"placeholders,omitempty"`
	Env          []string `json:"env,omitempty"`
	Cwd          string   `json:"cwd"`
	Command      []string `json:"command,omitempty"`
	TTY          bool     `json:"tty,omitempty"`
	Hostname     string   `json:"hostname"`

	// ProxySocket is the host path of this sandbox's egress proxy socket;
	// the init binds it at ProxyMount and, when ProxyPort is set, forwards
	// 127.0.0.1:ProxyPort inside the sandbox to it.
	ProxySocket string `json:"proxy_socket,omitempty"`
	ProxyPort   int    `json:"proxy_port,omitempty"`

	TmpBytes     int64 `json:"tmp_bytes"`
	ShmBytes     int64 `json:"shm_bytes"`
	TmpInodes    int64 `json:"tmp_inodes"`
	FileBytes    int64 `json:"file_bytes"`
	AddressSpace int64 `json:"address_space"`
	OpenFiles    int   `json:"open_files"`
	Procs        int   `json:"procs"`
	// PayloadPids, when set, is the command's own process limit, enforced
	// by a payload cgroup the init starts it in (see PayloadTasksFD). The
	// sandbox's cgroup allows a few more, for the init's own threads, so a
	// command that holds every process it may have cannot starve the init:
	// a Go runtime that fails to create a thread aborts.
	PayloadPids int `json:"payload_pids,omitempty"`
	// Join, when set, is the name of the sandbox's cgroup (the same in
	// every hierarchy), which the init joined itself as it started (see
	// JoinFD): before it reads anything else of the config, it checks that
	// /proc/self/cgroup names it in every hierarchy, and refuses to go on
	// otherwise. The host placed the init itself when it is empty.
	Join string `json:"join,omitempty"`

	// Seccomp asks the init to install the seccomp filter; the host sets
	// it whenever the init binary has one.
	Seccomp bool `json:"seccomp"`

	// UserCounts are the bounds the init writes to /proc/sys/user in the
	// sandbox's user namespace: this sandbox's share of what the host
	// lets the broker's user make of those kernel objects (package
	// peruser), which the sandboxes running at once divide between them.
	// Empty means peruser.Counts.
	UserCounts []UserCount `json:"user_counts,omitempty"`
	// SigPending and MsgQueueBytes, when set, are the sandbox's
	// RLIMIT_SIGPENDING and RLIMIT_MSGQUEUE: its share, like UserCounts,
	// of the signals and message queue bytes the broker's user may have.
	// Nil means peruser.SigPending and peruser.MsgQueueBytes.
	SigPending    *uint64 `json:"sig_pending,omitempty"`
	MsgQueueBytes *uint64 `json:"msg_queue_bytes,omitempty"`
	// ProcShare, when set and below Procs, is the sandbox's RLIMIT_NPROC
	// instead: its share of the processes the broker's user may have,
	// which the kernel charges the sandbox's processes against too.
	ProcShare *uint64 `json:"proc_share,omitempty"`
	// MemlockBytes, when set, is the sandbox's RLIMIT_MEMLOCK: its share
	// of the shared memory the broker's user may lock (SHM_LOCK), which
	// the kernel charges to that user too. Nil keeps the broker's own.
	MemlockBytes *uint64 `json:"memlock_bytes,omitempty"`

	// Claim makes the init stop after the grant mounts, report Staged and
	// wait for a Claim on ConfigFD before it protects the sandbox and
	// locks it down (a warm sandbox of the pool). Placeholders and the
	// Deadline then come with the Claim.
	Claim bool `json:"claim,omitempty"`

	// Deadline, when set, is the CLOCK_MONOTONIC time (ns) at which the
	// call's wall time runs out. The host kills the sandbox then; the
	// init ends it itself ExpireGrace later, reporting Status.Expired,
	// should the host not have: a host process stopped by job control
	// (SIGTSTP, SIGTTOU for output to a terminal set to tostop, SIGSTOP)
	// runs no timer, and nothing in the sandbox can stop its PID 1.
	Deadline int64 `json:"deadline,omitempty"`

	// DiskGuard asks the init to watch, as the host does, the free space
	// and inodes of the file systems of the writable mounts (package
	// diskguard, with DiskFloor as its floor setting: 0 is the default)
	// from just before it reports Ready, and to end the sandbox, reporting
	// Status.Disk, when one is drawn below its floor: the host's guard
	// does not run while job control has its process stopped.
	DiskGuard bool  `json:"disk_guard,omitempty"`
	DiskFloor int64 `json:"disk_floor,omitempty"`
}

// ExpireGrace is how long after Config.Deadline (or Claim.Deadline) the
// init ends a sandbox the host has not killed.
const ExpireGrace = 250 * time.Millisecond

// A UserCount is one bound of /proc/sys/user: the file's name and the
// value written to it.
type UserCount struct {
	Name string `json:"name"`
	Max  int    `json:"max"`
}

// Claim is what the host sends on ConfigFD, after Config, when a call
// takes a warm sandbox (Config.Claim).
type Claim struct {
	// Placeholders are as in Config.Placeholders: the host made them just
	// before sending the claim.
	Placeholders []string `json:"placeholders,omitempty"`
	// Deadline is as in Config.Deadline, for the call that claims the
	// sandbox.
	Deadline int64 `json:"deadline,omitempty"`
}

// Phase is the duration of one setup step, for profiling setup time.
type Phase struct {
	Name  string `json:"name"`
	Nanos int64  `json:"ns"`
}

// Status is one line the init writes on StatusFD.
type Status struct {
	// Error, when set, says why setup failed; the init then exits.
	Error string `json:"error,omitempty"`
	// Step, with Error, names the setup step that the host's kernel or
	// container runtime refused (one of the Step constants), so the host
	// can say what it lacks and how to provide it.
	Step string `json:"step,omitempty"`
	// Ready reports that setup finished and the payload is starting.
	Ready bool `json:"ready,omitempty"`
	// Staged reports (with Config.Claim) that the grant mounts are built
	// and the init waits for its Claim.
	Staged bool `json:"staged,omitempty"`
	// Joined, in the first status (Staged, or Ready for a sandbox not
	// built warm), is Config.Join once the init has checked it is in
	// those cgroups: the host runs nothing in a sandbox whose init does not
	// confirm the join it asked for (an init binary older than the host's
	// would ignore it, and run outside the memory limit).
	Joined string `json:"joined,omitempty"`
	// Features and Missing are the isolation features the init applied
	// and the ones it could not; with Phases, a warm sandbox's Staged
	// carries those of its build and its Ready only those of its claim.
	Features []string `json:"features,omitempty"`
	Missing  []string `json:"missing,omitempty"`
	// Created are sandbox paths of placeholder directories the init made
	// inside writable grants (for ReadOnly paths that did not exist); the
	// host removes them after the run if they are still empty.
	Created []string `json:"created,omitempty"`
	Phases  []Phase  `json:"phases,omitempty"`
	// MainAt and ConfigAt are CLOCK_MONOTONIC times (ns) at which the
	// init entered Main and had read its config, for profiling (in Ready,
	// and in Staged).
	MainAt   int64 `json:"main_at,omitempty"`
	ConfigAt int64 `json:"config_at,omitempty"`
	// SentAt is the CLOCK_MONOTONIC time (ns) at which the init wrote
	// this status (Ready and, in tool mode, Exit), so the host can tell
	// how long a status took to reach it, for profiling. Exit's Phases
	// then time the tool mode's run: from Ready to the tool's start
	// ("to-tool"), the tool ("tool"), and its end ("end").
	SentAt int64 `json:"sent_at,omitempty"`
	// ClaimAt (in Ready, with Config.Claim) is the CLOCK_MONOTONIC time
	// (ns) at which the init had read its Claim.
	ClaimAt int64 `json:"claim_at,omitempty"`

	// Exit reports how the payload ended: Code for a normal exit, Signal
	// for death by signal (command mode). In tool mode the init sends it
	// with the tool's exit code once every other process of the sandbox
	// has SIGKILL pending and its standard streams are closed; the host may
	// then answer the call before the init's exit is reaped.
	Exit   bool `json:"exit,omitempty"`
	Code   int  `json:"code,omitempty"`
	Signal int  `json:"signal,omitempty"`

	// Expired reports that the Deadline passed and the host had not
	// killed the sandbox: the init exits right after sending it, which
	// kills every process of the sandbox.
	Expired bool `json:"expired,omitempty"`
	// Disk reports that the init's disk guard found a file system the
	// sandbox may write below its floor (Config.DiskGuard): the init exits
	// right after sending it, as after Expired.
	Disk bool `json:"disk,omitempty"`
}

// Setup steps a host may refuse for want of a feature (Status.Step).
const (
	// StepProc: mounting the sandbox's own /proc was refused (EPERM).
	StepProc = "proc"
	// StepHostname: setting the sandbox's host name was refused (EPERM).
	StepHostname = "hostname"
	// StepMountNS: changing the propagation of the sandbox's / was
	// refused (EPERM): its mount namespace is not its own.
	StepMountNS = "mountns"
)

// ExitSetupFailed is the init's exit code when setup failed.
const ExitSetupFailed = 125

// JSON replaces each byte of a string that is not UTF-8 with U+FFFD, but a
// path on Linux is any bytes: a nested .git below a directory named
// "\xff" would reach the init as "\ufffd/.git", a path that does not
// exist, and the real one would stay writable. So Config and Claim carry
// every string that is not valid UTF-8 exactly, as bytes (base64) in
// "raw", keyed by its place in the list stringsOf makes; the plain field
// then holds the lossy text, which the decoder replaces.

// configJSON is Config without its methods.
type configJSON Config

// claimJSON is Claim without its methods.
type claimJSON Claim

// stringsOf lists a pointer to every string of c that names a path or is
// passed to the command, in a fixed order.
func (c *Config) stringsOf() []*string {
	var out []*string
	for i := range c.Mounts {
		out = append(out, &c.Mounts[i].Source, &c.Mounts[i].Target)
	}
	for _, l := range []*[]string{&c.Masks, &c.ReadOnly, &c.ReadOnlyDirs, &c.Placeholders, &c.Env, &c.Command} {
		for i := range *l {
			out = append(out, &(*l)[i])
		}
	}
	return append(out, &c.Cwd, &c.ProxySocket)
}

// rawOf returns the strings of ptrs that are not valid UTF-8, by index.
func rawOf(ptrs []*string) map[int][]byte {
	var raw map[int][]byte
	for i, p := range ptrs {
		if !utf8.ValidString(*p) {
			if raw == nil {
				raw = map[int][]byte{}
			}
			raw[i] = []byte(*p)
		}
	}
	return raw
}

// setRaw puts the exact strings back.
func setRaw(ptrs []*string, raw map[int][]byte) error {
	for i, b := range raw {
		if i < 0 || i >= len(ptrs) {
			return fmt.Errorf("raw string %d of %d", i, len(ptrs))
		}
		*ptrs[i] = string(b)
	}
	return nil
}

// MarshalJSON encodes c with every string exact (see stringsOf).
func (c Config) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		configJSON
		Raw map[int][]byte `json:"raw,omitempty"`
	}{configJSON(c), rawOf(c.stringsOf())})
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (c *Config) UnmarshalJSON(b []byte) error {
	var v struct {
		configJSON
		Raw map[int][]byte `json:"raw,omitempty"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*c = Config(v.configJSON)
	return setRaw(c.stringsOf(), v.Raw)
}

func (c *Claim) stringsOf() []*string {
	out := make([]*string, len(c.Placeholders))
	for i := range c.Placeholders {
		out[i] = &c.Placeholders[i]
	}
	return out
}

// MarshalJSON encodes c with every placeholder exact.
func (c Claim) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		claimJSON
		Raw map[int][]byte `json:"raw,omitempty"`
	}{claimJSON(c), rawOf(c.stringsOf())})
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (c *Claim) UnmarshalJSON(b []byte) error {
	var v struct {
		claimJSON
		Raw map[int][]byte `json:"raw,omitempty"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*c = Claim(v.claimJSON)
	return setRaw(c.stringsOf(), v.Raw)
}
