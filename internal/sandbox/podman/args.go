package podman

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox/peruser"
	"github.com/airlockhq/airlock/internal/sandbox/podman/inside"
)

// Paths inside the container that belong to airlock.
const (
	// ExeTarget is where the static airlock binary is mounted read-only.
	ExeTarget = "/.airlock/airlock"
	// ProxyTarget is where the egress proxy's socket is mounted, alone
	// and read-only.
	ProxyTarget = "/.airlock/proxy.sock"
	// Mode is the argument that starts the airlock binary as the
	// container's init (package inside).
	Mode = inside.Mode
	// LabelBroker labels every container with the broker that started it
	// (its procid.ID, "PID-STARTTIME"), so a later broker removes those of a dead one.
	LabelBroker = "io.airlock.broker"
	// ControlFD is the container init's descriptor of the broker's
	// control pipe, which carries the stop and the signals for the
	// command (one byte each, the signal's number); podman run passes
	// it on as its first descriptor after stderr.
	ControlFD = 3
	// ReportFD is the init's descriptor of the broker's report pipe,
	// where it writes the limits the container hit (package inside's
	// Report names) when its payload has ended; podman run passes it on
	// second.
	ReportFD = 4
	// EnvFD is the init's descriptor of the broker's environment pipe,
	// which carries the container's environment (inside.EncodeEnv):
	// Podman's --env would put every value on the podman client's
	// command line, which every local user can read. Podman passes it on
	// third.
	EnvFD = 5
)

// IDMap is the user namespace mapping of every container: container ids
// 0..IDCount-1 are host ids IDBase.., so container root is not host root.
// The range lies far above where useradd hands out subordinate ids
// (100000 up, 65536 a user), since a host user whose /etc/subuid range
// held these ids could map them in a namespace of their own and signal,
// trace or read the container's processes and files; New refuses a host
// where /etc/subuid or /etc/subgid gives anyone part of it.
const (
	IDBase  = 0x70000000
	IDCount = 65536
)

// nproc is RLIMIT_NPROC in the container. It is counted per host uid, so
// across every container of the mapping; the pids cgroup is the real
// bound. Podman cannot set it higher than conmon's own limit.
const nproc = 16384

// Bind is one mount of the container: a host Source (a staged mount,
// already idmapped) at Target.
type Bind struct {
	Source, Target string
	Writable       bool
}

// Invocation is everything Args renders into Podman's argument list.
type Invocation struct {
	Runtime string // OCI runtime (runc); empty for Podman's default
	// HooksDir is the only OCI hooks directory of the container (the
	// hook bounding its per-user kernel counts); empty for Podman's.
	HooksDir string
	Name     string // container name
	Broker   string // LabelBroker value
	Image    string // NAME@sha256:...
	Exe      string // host path of the static airlock binary
	Binds    []Bind
	// ProxySocket is the host path (staged) of the egress proxy's
	// socket; empty for no egress.
	ProxySocket string
	ProxyPort   int
	Wall        time.Duration
	MemoryBytes int64
	Pids        int
	FileBytes   int64
	TmpBytes    int64
	OpenFiles   int
	Cwd         string
	Command     []string // empty: the runner (tool mode)
}

// unsafeInMount reports whether p cannot be carried by Podman's --mount
// and --tmpfs syntax (fields split on ',', volumes on ':').
func unsafeInMount(p string) bool { return strings.ContainsAny(p, ",:\n") }

// MountPathError is a path Podman's mount syntax cannot carry safely.
type MountPathError struct{ Path string }

func (e *MountPathError) Error() string {
	return fmt.Sprintf("path %q cannot be mounted into a Podman container: it contains ':' or ',', which Podman's mount syntax would split; rename it, or use the native backend", e.Path)
}

// Args returns the arguments of `podman` for inv. It is the only place
// the container's isolation flags are decided.
func Args(inv *Invocation) ([]string, error) {
	for _, p := range []string{inv.Exe, inv.Cwd, inv.ProxySocket} {
		if unsafeInMount(p) {
			return nil, &MountPathError{Path: p}
		}
	}
	var a []string
	if inv.Runtime != "" {
		a = append(a, "--runtime", inv.Runtime)
	}
	if inv.HooksDir != "" {
		a = append(a, "--hooks-dir", inv.HooksDir)
	}
	secs := int64((inv.Wall + time.Second - 1) / time.Second)
	a = append(a, "run", "--rm", "--interactive",
		"--name", inv.Name,
		"--label", LabelBroker+"="+inv.Broker,
		"--pull", "never",
		"--log-driver", "passthrough",
		"--network", "none",
		"--no-hosts",
		"--hostname", "airlock",
		"--ipc", "private",
		"--pid", "private",
		"--uts", "private",
		"--cgroupns", "private",
		"--read-only",
		"--read-only-tmpfs=false",
		// The image's VOLUMEs are not mounted: Podman made each a
		// writable anonymous volume on the host's disk, a place to write
		// besides the grants and /tmp, past the read-only root, the tmpfs
		// size and the disk guard.
		"--image-volume", "ignore",
		// The image's HEALTHCHECK is not run: Podman (under systemd)
		// would podman exec it into the container on a timer, a process
		// outside airlock's init, its seccomp filter and its limits.
		// (--health-cmd none sets one up: Podman then asks systemd for
		// the timer, and says so on stderr where there is none.)
		"--no-healthcheck",
		"--cap-drop", "all",
		"--security-opt", "no-new-privileges",
		"--uidmap", fmt.Sprintf("0:%d:%d", IDBase, IDCount),
		"--gidmap", fmt.Sprintf("0:%d:%d", IDBase, IDCount),
		"--memory", strconv.FormatInt(inv.MemoryBytes, 10),
		"--memory-swap", strconv.FormatInt(inv.MemoryBytes, 10),
		"--pids-limit", strconv.Itoa(inv.Pids),
		"--ulimit", fmt.Sprintf("nofile=%d:%d", inv.OpenFiles, inv.OpenFiles),
		"--ulimit", fmt.Sprintf("fsize=%d:%d", inv.FileBytes, inv.FileBytes),
		"--ulimit", fmt.Sprintf("nproc=%d:%d", nproc, nproc),
		"--ulimit", "core=1:1", // 1: where core_pattern is a pipe, the kernel pipes no core (see inside.coreLimit)
		// Queued signals and message queues' bytes are charged to host
		// root (which made the container's user namespace), as on the
		// native backend (peruser).
		"--ulimit", fmt.Sprintf("sigpending=%d:%d", peruser.SigPending, peruser.SigPending),
		"--ulimit", fmt.Sprintf("msgqueue=%d:%d", peruser.MsgQueueBytes, peruser.MsgQueueBytes),
		// conmon kills the container at this time even if the broker died.
		"--timeout", strconv.FormatInt(secs+5, 10),
		"--tmpfs", fmt.Sprintf("/tmp:rw,nosuid,nodev,size=%d,mode=1777", inv.TmpBytes),
		// /dev/shm, the container's other tmpfs, is sized by the tmp
		// limit as /tmp is, as on the native backend: Podman's default
		// gave 64 MB there whatever the grant's limits.tmp.
		"--shm-size", strconv.FormatInt(inv.TmpBytes, 10),
		// A read-only /dev: Podman's own was a writable tmpfs owned by
		// container root, whom every call runs as, so a call wrote files
		// and directories there (64 MiB of them) outside its grants and
		// past the tmp limit. runc makes the device nodes (binds of the
		// host's) and the mount points below it before it remounts it
		// read-only; Podman adds no /dev/mqueue under a /dev of ours,
		// which the native backend has none of either.
		"--mount", "type=tmpfs,destination=/dev,ro,nosuid,noexec,tmpfs-size=65536,tmpfs-mode=0755",
		// No pseudo-terminals: an empty read-only tmpfs covers Podman's
		// devpts (and so /dev/ptmx, its link), as on the native backend,
		// which gives none. Podman's gave each container a devpts of its
		// own, and every pty it opened counted against the kernel's one
		// limit of all of them (kernel.pty.max less kernel.pty.reserve,
		// 3072 of 4096, for every devpts but the host's): a call held
		// hundreds, and could take what every other container on the host
		// and the host's own users were left.
		"--mount", "type=tmpfs,destination=/dev/pts,ro,tmpfs-size=4096,tmpfs-mode=0555",
		"--systemd", "false",
		"--unsetenv-all",
		// The broker's control pipe (ControlFD): its stop and signals;
		// its report pipe (ReportFD): the limits the container hit; and
		// its environment pipe (EnvFD): the container's environment.
		"--preserve-fds", "3",
	)
	if inv.Cwd != "" {
		a = append(a, "--workdir", inv.Cwd)
	}
	a = append(a, "--mount", "type=bind,src="+inv.Exe+",dst="+ExeTarget+",ro")
	if inv.ProxySocket != "" {
		a = append(a, "--mount", "type=bind,src="+inv.ProxySocket+",dst="+ProxyTarget+",ro")
	}
	for _, b := range inv.Binds {
		if unsafeInMount(b.Source) {
			return nil, &MountPathError{Path: b.Source}
		}
		if unsafeInMount(b.Target) {
			return nil, &MountPathError{Path: b.Target}
		}
		m := "type=bind,src=" + b.Source + ",dst=" + b.Target
		if b.Writable {
			m += ",rw"
		} else {
			m += ",ro"
		}
		a = append(a, "--mount", m)
	}
	a = append(a, "--entrypoint", ExeTarget, inv.Image, Mode, "--deadline", strconv.FormatInt(secs, 10),
		"--control", strconv.Itoa(ControlFD), "--report", strconv.Itoa(ReportFD), "--env", strconv.Itoa(EnvFD))
	// The init guards the file systems of the writable mounts as the
	// broker does: the broker's guard does not run while job control has
	// it stopped.
	for _, b := range inv.Binds {
		if b.Writable {
			a = append(a, "--disk-guard", b.Target)
		}
	}
	if inv.ProxySocket != "" {
		a = append(a, "--proxy", ProxyTarget, "--proxy-port", strconv.Itoa(inv.ProxyPort))
	}
	if len(inv.Command) > 0 {
		a = append(a, "--")
		a = append(a, inv.Command...)
	}
	return a, nil
}
