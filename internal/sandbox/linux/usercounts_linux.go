package linux

import (
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
	"github.com/airlockhq/airlock/internal/sandbox/peruser"
)

// userCounts divides the broker's host user's per-user kernel objects
// among the sandboxes of this process: inotify instances and watches and
// fanotify groups and marks (the knobs of /proc/sys/user that
// peruser.Counts bounds), queued signals and the bytes of POSIX message
// queues (RLIMIT_SIGPENDING and RLIMIT_MSGQUEUE). The kernel charges a
// sandbox's objects to its own user namespace and to every one above it,
// up to the host user's limit there, so each sandbox's bound alone did not
// keep the user's allowance: four sandboxes at 32 inotify instances
// apiece, a model's parallel calls, took all 128 of the user's (host
// root's, under a root broker), and fourteen at 64 KiB of message queues,
// background calls that may run for a day, all of its 800 KiB; the
// user's own processes got none while they ran.
var userCounts = countLedger{bounds: userBounds}

// A userBound is one per-user kernel object a sandbox is bounded in.
type userBound struct {
	name  string             // the /proc/sys/user knob, or one of the rlimits below
	want  int                // a sandbox's bound when enough is left (rlimitNproc: the call's)
	limit func() (int, bool) // the user's own limit, if known and finite
	floor int                // the least share a sandbox gets, however little is left
}

// The names of the rlimits among a sandbox's shares.
const (
	rlimitSigPending = "RLIMIT_SIGPENDING"
	rlimitMsgQueue   = "RLIMIT_MSGQUEUE"
	rlimitNproc      = "RLIMIT_NPROC"
	rlimitMemlock    = "RLIMIT_MEMLOCK"
)

// userLimitDir is where the broker's user's limits are read (the knobs
// of the broker's own user namespace).
const userLimitDir = "/proc/sys/user/"

// userBounds are peruser's bounds, each with where the user's own limit
// is read: the knobs of /proc/sys/user, and the broker's own rlimits for
// the two whose count the kernel checks against the rlimit of the
// process that made the sandbox's user namespace.
var userBounds = func() []userBound {
	var out []userBound
	for _, c := range peruser.Counts {
		out = append(out, userBound{name: c.Name, want: c.Max, limit: func() (int, bool) { return readLimit(userLimitDir + c.Name) }})
	}
	return append(out,
		userBound{name: rlimitSigPending, want: peruser.SigPending, limit: func() (int, bool) { return ownRlimit(unix.RLIMIT_SIGPENDING) }},
		userBound{name: rlimitMsgQueue, want: peruser.MsgQueueBytes, limit: func() (int, bool) { return ownRlimit(unix.RLIMIT_MSGQUEUE) }},
		// The init's own threads need to be made whatever is left: a
		// share below them ends the sandbox, not just its command.
		userBound{name: rlimitNproc, limit: nprocLimit, floor: initThreads},
		// Wanted: what the broker has, which a sandbox kept before; with
		// no finite limit to share (or for host root, whose own processes
		// may lock regardless) the sandbox keeps it as it is.
		userBound{name: rlimitMemlock, want: -1, limit: memlockLimit})
}()

// memlockLimit is the broker's soft RLIMIT_MEMLOCK when the kernel holds
// what a sandbox locks of shared memory against it for the user: not for
// host root, whose own processes lock with CAP_IPC_LOCK whatever is locked.
func memlockLimit() (int, bool) {
	if os.Geteuid() == 0 && hostRoot() {
		return 0, false
	}
	return ownRlimit(unix.RLIMIT_MEMLOCK)
}

// nprocLimit is the broker's soft RLIMIT_NPROC when the kernel holds a
// sandbox's processes to it: at every fork in a user namespace, the
// processes of the user that made it count against the RLIMIT_NPROC that
// user had then, unless it is host root (uid 0 of the first user
// namespace), whose processes the kernel never counts against it.
func nprocLimit() (int, bool) {
	if os.Geteuid() == 0 && hostRoot() {
		return 0, false
	}
	return ownRlimit(unix.RLIMIT_NPROC)
}

// hostRoot reports whether this process's user namespace is the host's
// (its uid map maps every uid to itself), so that uid 0 is host root.
func hostRoot() bool {
	b, err := os.ReadFile("/proc/self/uid_map")
	return err == nil && slices.Equal(strings.Fields(string(b)), []string{"0", "0", "4294967295"})
}

// countLedger is the share of the user's limits that the sandboxes alive
// hold. Together they hold at most half of each limit; each new sandbox
// gets its bound or, when less is left, half of what is left (rounded
// up), so later sandboxes still get some while earlier ones run, and one
// may get none when the budget is spent.
type countLedger struct {
	bounds []userBound
	mu     sync.Mutex
	budget map[string]int // half the user's limit; absent: the limit is unknown
	used   map[string]int
}

// reserve returns the bounds of one more sandbox, whose process limit
// (its init's threads included) is procs, taken from the budget until
// release gives them back.
func (l *countLedger) reserve(procs int) []initproto.UserCount {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.budget == nil {
		l.budget, l.used = map[string]int{}, map[string]int{}
		for _, b := range l.bounds {
			if n, ok := b.limit(); ok {
				l.budget[b.name] = n / 2
			}
		}
	}
	out := make([]initproto.UserCount, 0, len(l.bounds))
	for _, b := range l.bounds {
		n := b.want
		if b.name == rlimitNproc {
			n = procs
		}
		budget, ok := l.budget[b.name]
		if n < 0 {
			// As much as the broker has: its whole limit, or, without
			// one, no share at all (the sandbox keeps what it inherits).
			if !ok {
				continue
			}
			n = 2 * budget
		}
		if ok {
			n = min(n, max((max(budget-l.used[b.name], 0)+1)/2, b.floor))
			l.used[b.name] += n
		}
		out = append(out, initproto.UserCount{Name: b.name, Max: n})
	}
	return out
}

// release gives back what reserve returned, once the sandbox is gone.
func (l *countLedger) release(shares []initproto.UserCount) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range shares {
		if _, ok := l.budget[c.Name]; ok {
			l.used[c.Name] -= c.Max
		}
	}
}

// applyShares puts a sandbox's shares (reserve) in its config: the
// rlimits as such, the rest as the knobs of /proc/sys/user.
func applyShares(cfg *initproto.Config, shares []initproto.UserCount) {
	cfg.UserCounts = nil
	for _, c := range shares {
		v := uint64(c.Max)
		switch c.Name {
		case rlimitSigPending:
			cfg.SigPending = &v
		case rlimitMsgQueue:
			cfg.MsgQueueBytes = &v
		case rlimitNproc:
			cfg.ProcShare = &v
		case rlimitMemlock:
			cfg.MemlockBytes = &v
		default:
			cfg.UserCounts = append(cfg.UserCounts, c)
		}
	}
}

// readLimit reads one non-negative number from path.
func readLimit(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return n, err == nil && n >= 0
}

// ownRlimit is this process's soft limit of resource, when finite.
func ownRlimit(resource int) (int, bool) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(resource, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY || rl.Cur > math.MaxInt32 {
		return 0, false
	}
	return int(rl.Cur), true
}
