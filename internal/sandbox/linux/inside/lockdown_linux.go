package inside

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"

	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
	"github.com/airlockhq/airlock/internal/sandbox/peruser"
)

// loopbackUp brings up lo, the only interface of the new network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket for lo: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	ifr.SetUint16(unix.IFF_UP | unix.IFF_RUNNING | unix.IFF_LOOPBACK)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing up lo: %w", err)
	}
	return nil
}

// coreLimit is the sandbox's RLIMIT_CORE, which its seccomp filter keeps
// (no process in it may change it). Exactly 1, not 0: where the host's
// core_pattern pipes cores to a helper (systemd-coredump, apport), the
// kernel runs that helper as root on the host for every crash whatever
// the limit, unless it is 1, its mark of a crash it must not pipe; a
// file pattern writes no core under a page either. So a crash in the
// sandbox starts nothing on the host and writes nothing outside it.
const coreLimit = 1

// setRlimits applies the per-process limits. RLIMIT_AS is generous (see
// the host side): runtimes such as Go and the JVM reserve far more
// address space than they touch, and the memory cgroup is the real bound.
func setRlimits(cfg *initproto.Config) error {
	set := func(name string, res int, v uint64) error {
		if err := syscall.Setrlimit(res, &syscall.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("setting %s to %d: %w", name, v, err)
		}
		return nil
	}
	if err := set("RLIMIT_CORE", unix.RLIMIT_CORE, coreLimit); err != nil {
		return err
	}
	// No scheduling priority above the ordinary: a broker whose user may
	// raise it (an audio group's limits.conf grants rtprio and nice) would
	// otherwise pass that on, and a payload at SCHED_FIFO starves the
	// host's CPUs, which no cgroup limit of a call bounds.
	if err := set("RLIMIT_RTPRIO", unix.RLIMIT_RTPRIO, 0); err != nil {
		return err
	}
	if err := set("RLIMIT_NICE", unix.RLIMIT_NICE, 0); err != nil {
		return err
	}
	// Queued signals and message queues' bytes count against the broker's
	// host user (the sandbox's uid 0 is it): without a bound, a sandbox
	// queued the user's whole allowance, and the host's own timer_create
	// and sigqueue failed.
	// The host gives each sandbox its share of the user's (see
	// initproto.Config.SigPending), since the user's own processes count
	// what all of them queue.
	sigPending, msgQueue := uint64(peruser.SigPending), uint64(peruser.MsgQueueBytes)
	if cfg.SigPending != nil {
		sigPending = *cfg.SigPending
	}
	if cfg.MsgQueueBytes != nil {
		msgQueue = *cfg.MsgQueueBytes
	}
	if err := set("RLIMIT_SIGPENDING", unix.RLIMIT_SIGPENDING, sigPending); err != nil {
		return err
	}
	if err := set("RLIMIT_MSGQUEUE", unix.RLIMIT_MSGQUEUE, msgQueue); err != nil {
		return err
	}
	// Locked shared memory (SHM_LOCK) counts against the broker's user
	// too: a sandbox that kept the user's RLIMIT_MEMLOCK locked all of
	// it, and the user's own processes could lock none.
	if cfg.MemlockBytes != nil {
		if err := set("RLIMIT_MEMLOCK", unix.RLIMIT_MEMLOCK, *cfg.MemlockBytes); err != nil {
			return err
		}
	}
	if cfg.AddressSpace > 0 {
		if err := set("RLIMIT_AS", unix.RLIMIT_AS, uint64(cfg.AddressSpace)); err != nil {
			return err
		}
	}
	if cfg.FileBytes > 0 {
		if err := set("RLIMIT_FSIZE", unix.RLIMIT_FSIZE, uint64(cfg.FileBytes)); err != nil {
			return err
		}
	}
	if cfg.OpenFiles > 0 {
		if err := set("RLIMIT_NOFILE", unix.RLIMIT_NOFILE, uint64(cfg.OpenFiles)); err != nil {
			return err
		}
	}
	if cfg.Procs > 0 {
		// The kernel counts a sandbox's processes against the broker's
		// user as well (up to the user's RLIMIT_NPROC, unless that user is
		// host root): the host gives each sandbox its share of the user's
		// (initproto.Config.ProcShare), so the user's own processes and the
		// broker's threads are not refused while sandboxes run.
		procs := uint64(cfg.Procs)
		if cfg.ProcShare != nil && *cfg.ProcShare < procs {
			procs = *cfg.ProcShare
		}
		if err := set("RLIMIT_NPROC", unix.RLIMIT_NPROC, procs); err != nil {
			return err
		}
	}
	return nil
}

// allThreads runs a syscall on every thread of the process: credentials
// and prctl state are per thread, and the Go runtime has several.
func allThreads(trap, a1, a2, a3 uintptr) error { return allThreads6(trap, a1, a2, a3, 0) }

// allThreads6 is allThreads for a syscall of four arguments.
func allThreads6(trap, a1, a2, a3, a4 uintptr) error {
	_, _, e := psx.Syscall6(trap, a1, a2, a3, a4, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 63
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 63
	}
	return n
}

// secureBits are the securebits the sandbox runs with: NOROOT,
// NOROOT_LOCKED, NO_SETUID_FIXUP (and locked), KEEP_CAPS_LOCKED.
const secureBits = 0x2f

// dropBounding locks the securebits so uid 0 gains nothing at exec and
// empties the bounding and ambient sets, on every thread. The capabilities
// the init holds now (effective and permitted) are unchanged: it may still
// mount, and a warm sandbox does this before it waits for its claim, so
// that only clearCaps is left for the call's clock.
func dropBounding(last int) error {
	if err := allThreads(unix.SYS_PRCTL, unix.PR_SET_SECUREBITS, secureBits, 0); err != nil {
		return fmt.Errorf("setting securebits: %w", err)
	}
	for c := 0; c <= last; c++ {
		if err := allThreads(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, uintptr(c), 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	if err := allThreads(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0); err != nil {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	return nil
}

// lockedAtSpawn reports whether the init was started with the securebits
// locked as dropBounding locks them, an empty bounding set and
// no_new_privs, as the host's spawner makes them before its exec (see
// airlock_lockdown in package linux). They are per thread, and every
// thread of the process descends from the one that exec'd, which nothing
// but this init changes: what this thread shows, every thread has, and
// dropBounding and noNewPrivs, with their all-threads calls, are skipped.
// The ambient capabilities the spawner gave the init go with the rest at
// clearCaps.
func lockedAtSpawn() bool {
	if bits, err := unix.PrctlRetInt(unix.PR_GET_SECUREBITS, 0, 0, 0, 0); err != nil || bits != secureBits {
		return false
	}
	if nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0); err != nil || nnp != 1 {
		return false
	}
	for c := 0; c < 64; c++ {
		in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EINVAL) {
			break // past the kernel's last capability
		}
		if err != nil || in != 0 {
			return false
		}
	}
	return true
}

// clearCaps clears the effective, permitted and inheritable capabilities
// of every thread.
func clearCaps() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := allThreads(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); err != nil {
		return fmt.Errorf("clearing capabilities: %w", err)
	}
	return nil
}

func noNewPrivs() error {
	if err := allThreads(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	return nil
}

// unixFeature names Landlock's control of connecting to pathname Unix
// sockets (ABI 9). Below it a read-only mount does not stop connect(2), so
// a socket under a read-only grant stays connectable; the result then lists
// it as missing.
const unixFeature = "landlock-unix"

// A landlockRuleset is the sandbox's Landlock ruleset, which restricts the
// filesystem to what the mounts already allow (defence in depth) and
// scopes abstract sockets and signals, made (its rules
// opened, checked and added) but not yet enforced. A warm sandbox makes it
// before it waits for its claim, once its tree is built, so that only the
// enforcement is on the call's clock (see earlyLandlock).
type landlockRuleset struct {
	fd    int    // -1: nothing to enforce (no Landlock)
	flags uint32 // the domain's flags, without TSYNC
	abi   int
	name  string // the feature names, "" without Landlock
}

// newLandlockRuleset makes the ruleset for cfg, at the best ABI the kernel
// has: the same rules, and the same downgrade, as landlock.Config.Restrict
// would apply.
func newLandlockRuleset(cfg *initproto.Config) (*landlockRuleset, error) {
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return &landlockRuleset{fd: -1}, nil
	}
	rw, rwFiles, rwGrantFiles := landlockPaths(cfg)
	c := landlock.V11
	c.HandledAccessNet = 0 // loopback servers are legitimate; the netns has no route out
	if abi < 8 {
		// Without TSYNC (ABI 8) the ruleset is enforced thread by thread,
		// and each thread gets its own, sibling, domain. Scoped signals
		// would then fail between the runner's threads and the processes
		// they start; the PID and network namespaces already confine
		// signals and abstract sockets, so scopes are left out.
		c.Scoped = 0
	}
	rules := []landlock.Rule{
		landlock.RODirs("/"),
		landlock.RWDirs(rw...).WithRefer().WithResolveUnix(),
		landlock.RWFiles(rwFiles...).WithIoctlDev(),
	}
	if cfg.ProxySocket != "" {
		rules = append(rules, landlock.RODirs(filepath.Dir(initproto.ProxyMount)).WithResolveUnix())
	}
	if len(rwGrantFiles) > 0 {
		rules = append(rules, landlock.RWFiles(rwGrantFiles...))
	}
	if abi < 8 && psxReadsTasks {
		// As go-landlock's own Restrict does (its issue 39): libpsx
		// lists the threads in /proc/PID/task while they are restricted
		// one by one.
		rules = append(rules, landlock.PathAccess(llsys.AccessFSReadDir, fmt.Sprintf("/proc/%d/task", os.Getpid())))
	}
	fd, flags, err := c.BestEffort().NewRulesetFD(rules...)
	if err != nil {
		return nil, fmt.Errorf("applying Landlock: %w", err)
	}
	name := "landlock-abi" + strconv.Itoa(abi)
	if c.Scoped != 0 && abi >= 6 {
		name += " landlock-scoped"
	}
	if abi >= 9 {
		// connect(2) to a pathname Unix socket outside the read-write
		// trees (a host service's socket under a read-only grant) is refused.
		name += " " + unixFeature
	}
	if fd < 0 {
		name = ""
	}
	return &landlockRuleset{fd: fd, flags: flags, abi: abi, name: name}, nil
}

// landlockPaths lists the paths Landlock lets the sandbox write: the
// directories (with /tmp and /dev/shm), the device files, and the
// writable grants that are files.
func landlockPaths(cfg *initproto.Config) (rw, rwFiles, rwGrantFiles []string) {
	rw = []string{"/tmp", "/dev/shm"}
	rwFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}
	if cfg.TTY {
		rwFiles = append(rwFiles, "/dev/pts/0", "/dev/console")
	}
	for _, m := range cfg.Mounts {
		if !m.Writable {
			continue
		}
		if fi, err := os.Stat(m.Target); err == nil && !fi.IsDir() {
			rwGrantFiles = append(rwGrantFiles, m.Target)
		} else {
			rw = append(rw, m.Target)
		}
	}
	return rw, rwFiles, rwGrantFiles
}

// earlyLandlock reports whether cfg's ruleset may be made before the
// sandbox is protected: a rule names the inode its path resolves to when
// it is added, so no path of a rule may be one that protect mounts over,
// or lie below one (a denied directory is covered by an empty tmpfs), and
// none may be made by protect (the proxy's directory holds the list of
// placeholders too).
func earlyLandlock(cfg *initproto.Config) bool {
	if cfg.ProxySocket != "" {
		return false
	}
	rw, rwFiles, rwGrantFiles := landlockPaths(cfg)
	paths := append(append(append([]string{"/"}, rw...), rwFiles...), rwGrantFiles...)
	for _, held := range append(slices.Clone(cfg.Masks), cfg.ReadOnly...) {
		for _, p := range paths {
			if p == held || strings.HasPrefix(p, held+"/") {
				return false
			}
		}
	}
	return true
}

// enforce restricts every thread of the init with the ruleset and returns
// the feature names (space-separated), or "" without Landlock. Every
// thread has no_new_privs already (noNewPrivs, or the early lockdown
// before the runtime started, which its threads inherit).
func (r *landlockRuleset) enforce() (string, error) {
	if r.fd < 0 {
		return "", nil
	}
	var err error
	if r.abi >= 8 {
		err = llsys.LandlockRestrictSelf(r.fd, r.flags|llsys.FlagRestrictSelfTSync)
	} else {
		err = llsys.AllThreadsLandlockRestrictSelf(r.fd, r.flags)
	}
	if err != nil {
		return "", fmt.Errorf("applying Landlock: landlock_restrict_self: %w", err)
	}
	return r.name, nil
}

// close closes the ruleset.
func (r *landlockRuleset) close() {
	if r.fd >= 0 {
		unix.Close(r.fd)
		r.fd = -1
	}
}
