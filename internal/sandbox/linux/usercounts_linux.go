package linux

import (
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
	"github.com/airlockhq/airlock/internal/sandbox/peruser"
)

// userCounts divides the broker's host user's per-user kernel objects
// (inotify instances and watches, fanotify groups and marks: the knobs of
// /proc/sys/user that peruser.Counts bounds) among the sandboxes of this
// process. The kernel charges a sandbox's objects to its own user
// namespace and to every one above it, up to the host user's limit there,
// so each sandbox's bound alone did not keep the user's allowance: four
// sandboxes at 32 inotify instances apiece, a model's parallel calls,
// took all 128 of the user's (host root's, under a root broker), and
// inotify_init failed for every process of the user while they ran.
var userCounts countLedger

// countLedger is the share of the user's limits that the sandboxes alive
// hold. Together they hold at most half of each limit; each new sandbox
// gets its peruser.Counts value or, when less is left, half of what is
// left (rounded up), so later sandboxes still get some while earlier ones
// run, and one may get none when the budget is spent.
type countLedger struct {
	mu     sync.Mutex
	budget map[string]int // half the user's limit; absent: the limit is unknown
	used   map[string]int
}

// userLimitDir is where the broker's user's limits are read (the knobs
// of the broker's own user namespace).
const userLimitDir = "/proc/sys/user/"

// reserve returns the bounds of one more sandbox, taken from the budget
// until release gives them back.
func (l *countLedger) reserve() []initproto.UserCount {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.budget == nil {
		l.budget, l.used = map[string]int{}, map[string]int{}
		for _, c := range peruser.Counts {
			if n, ok := readLimit(userLimitDir + c.Name); ok {
				l.budget[c.Name] = n / 2
			}
		}
	}
	out := make([]initproto.UserCount, 0, len(peruser.Counts))
	for _, c := range peruser.Counts {
		n := c.Max
		if b, ok := l.budget[c.Name]; ok {
			n = min(n, (max(b-l.used[c.Name], 0)+1)/2)
			l.used[c.Name] += n
		}
		out = append(out, initproto.UserCount{Name: c.Name, Max: n})
	}
	return out
}

// release gives back what reserve returned, once the sandbox is gone.
func (l *countLedger) release(counts []initproto.UserCount) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range counts {
		if _, ok := l.budget[c.Name]; ok {
			l.used[c.Name] -= c.Max
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
