package linux

import (
	"bytes"
	"strings"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// SetMaxBuildWait sets how long a call that finds its shape's pool empty
// waits for a sandbox being built, until the returned func restores it.
func SetMaxBuildWait(d time.Duration) (restore func()) {
	was := maxBuildWait
	maxBuildWait = d
	return func() { maxBuildWait = was }
}

// SetRefillDelay sets how long the replacement of a taken warm sandbox
// waits while its shape has one ready, until the returned func restores it.
func SetRefillDelay(d time.Duration) (restore func()) {
	was := refillDelay
	refillDelay = d
	return func() { refillDelay = was }
}

// PoolBuilds returns, for spec's shape, how many warm sandboxes are ready,
// being built, and waiting for refillDelay to be built.
func (b *Backend) PoolBuilds(spec *sandbox.Spec) (ready, building, deferred int) {
	l := withDefaults(spec.Limits)
	cfg, err := b.config(spec, l)
	if err != nil {
		return 0, 0, 0
	}
	k, ok := shapeOf(spec, cfg, l)
	if !ok {
		return 0, 0, 0
	}
	b.pool.mu.Lock()
	defer b.pool.mu.Unlock()
	sh := b.pool.shapes[k.full]
	if sh == nil {
		return 0, 0, 0
	}
	return len(sh.ready), sh.building, sh.deferred
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers (a debug
// logger's), for the tests of this package and of linux_test.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// NewCopySealed is New with the init's binary always a sealed memfd copy,
// the path of a broker that may not mount, so tests run it as root too.
func NewCopySealed(o *Options) (*Backend, error) {
	sealCopyOnly.Store(true)
	defer sealCopyOnly.Store(false)
	return New(o)
}

// CgroupOfTask returns, from a task's /proc cgroup file, its path in the
// v1 hierarchy of controller h ("" when the task has none there).
func CgroupOfTask(b []byte, h string) string {
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == h {
				return f[2]
			}
		}
	}
	return ""
}

// SpawnBuilt says spawnInit is built in (cgo on amd64).
const SpawnBuilt = spawnBuilt

// MissDeadlines keeps the host's deadline timers from firing, as in a
// broker stopped by job control, until the returned func restores them.
func MissDeadlines() (restore func()) {
	hostDeadlinesOff.Store(true)
	return func() { hostDeadlinesOff.Store(false) }
}
