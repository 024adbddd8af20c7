package linux

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux/eintr"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

// Pool limits.
const (
	// maxShapes is how many shapes (one grant under different limits, as
	// the tools' limits differ) keep warm sandboxes at once; the least
	// recently used is drained past it.
	maxShapes = 4
	// warmSetupTimeout bounds the setup of a sandbox built for the pool.
	warmSetupTimeout = 30 * time.Second
	// maxExtra is how many warm sandboxes a shape may keep beyond the
	// pool's size when calls come faster than sandboxes are built: each
	// call that finds its shape empty adds one (see shape.extra).
	maxExtra = 4
)

// maxBuildWait bounds how long a call that finds its shape empty waits
// for a sandbox being built for it before it builds its own (a variable
// for tests).
var maxBuildWait = time.Second

// refillDelay is how long the build of a taken warm sandbox's replacement
// waits while its shape still has one ready (a variable for tests). The
// refill comes as the call's Run returns, when the broker still has the
// call's answer to record and send: a build started then (a clone, and an
// init starting on the other core) ran beside it, and on two cores an
// answer after an idle pause came 4-21% later (docs/performance.md). A
// call that finds its shape empty starts the deferred builds at once.
var refillDelay = 5 * time.Millisecond

// shapeKey names what a warm sandbox was built for. full covers
// everything fixed at build time (mounts, masks, protected paths, env,
// cwd, rlimits, cgroup limits); grant covers the grant's part alone, so a
// different grant drains the pool while the tools' limits do not.
type shapeKey struct{ full, grant string }

// shapeOf returns the shape of a spec the pool can serve: tool mode (no
// Command), no terminal, no egress proxy (its socket is per call). The
// wall time and output cap are applied when a sandbox is taken, so they
// are not part of the shape.
func shapeOf(spec *sandbox.Spec, cfg *initproto.Config, l limits) (shapeKey, bool) {
	if len(spec.Command) != 0 || spec.TTY || spec.Network.ProxySocket != "" {
		return shapeKey{}, false
	}
	hash := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			return ""
		}
		h := sha256.Sum256(b)
		return hex.EncodeToString(h[:])
	}
	// A Config, so every path is hashed exact (initproto's raw strings).
	// The grant's part leaves out which mounts are writable: a tool that
	// changes nothing gets the same grant's mounts read-only (a shape of
	// its own, not another grant).
	mounts := make([]initproto.Mount, len(cfg.Mounts))
	writable := make([]bool, len(cfg.Mounts))
	for i, m := range cfg.Mounts {
		mounts[i] = initproto.Mount{Source: m.Source, Target: m.Target}
		writable[i] = m.Writable
	}
	g := hash(initproto.Config{Mounts: mounts, Masks: cfg.Masks, ReadOnly: cfg.ReadOnly, ReadOnlyDirs: cfg.ReadOnlyDirs, Env: cfg.Env, Cwd: cfg.Cwd})
	// The rest of cfg, without the grant's part g already covers: its
	// paths are most of the config, and this runs on every call's clock.
	rest := *cfg
	rest.Mounts, rest.Masks, rest.ReadOnly, rest.ReadOnlyDirs, rest.Env, rest.Cwd = nil, nil, nil, nil, nil, ""
	// Each sandbox's own cgroup: set by build, never part of a shape.
	rest.Join = ""
	f := hash([]any{g, writable, rest, l.mem, l.pids})
	if g == "" || f == "" {
		return shapeKey{}, false
	}
	return shapeKey{full: f, grant: g}, true
}

// shapeMemo is the last shape Backend.shape worked out, with what it
// worked it out from.
type shapeMemo struct {
	cfg  initproto.Config // Join cleared
	mem  int64
	pids int
	key  shapeKey
}

// shape is shapeOf, remembered for the last config it was worked out for:
// a session's calls ask for the same shape over and over, and comparing
// the config costs a few microseconds where encoding and hashing it cost
// ~70 us on a warm call's clock. The comparison covers every field of the
// config (but Join, which no shape includes) and the limits shapeOf hashes.
func (b *Backend) shape(spec *sandbox.Spec, cfg *initproto.Config, l limits) (shapeKey, bool) {
	if len(spec.Command) != 0 || spec.TTY || spec.Network.ProxySocket != "" {
		return shapeKey{}, false
	}
	c := *cfg
	c.Join = ""
	if m := b.lastShape.Load(); m != nil && m.mem == l.mem && m.pids == l.pids && reflect.DeepEqual(&m.cfg, &c) {
		return m.key, true
	}
	k, ok := shapeOf(spec, cfg, l)
	if ok {
		b.lastShape.Store(&shapeMemo{cfg: cloneConfig(c), mem: l.mem, pids: l.pids, key: k})
	}
	return k, ok
}

// cloneConfig returns c with slices of its own.
func cloneConfig(c initproto.Config) initproto.Config {
	c.Mounts = slices.Clone(c.Mounts)
	c.Masks = slices.Clone(c.Masks)
	c.ReadOnly = slices.Clone(c.ReadOnly)
	c.ReadOnlyDirs = slices.Clone(c.ReadOnlyDirs)
	c.Placeholders = slices.Clone(c.Placeholders)
	c.Env = slices.Clone(c.Env)
	c.Command = slices.Clone(c.Command)
	return c
}

// pathState is what a host path of the grant was when a warm sandbox was
// built: the sandbox's mounts hold those objects, so a path that changed
// since (a masked file created or replaced, a granted directory swapped)
// means the warm sandbox no longer matches what a cold one would build.
type pathState struct {
	path     string
	exists   bool
	dev, ino uint64
	mode     uint32
	size     int64 // of a file (a placeholder written to is a change)
}

// grantPaths lists the host paths behind cfg's mounts, masks and
// protected paths, and their state now. A placeholder this backend holds
// for a call counts as missing: calls come and go while a warm sandbox
// waits, and it will get its own placeholders when claimed.
func (b *Backend) grantPaths(cfg *initproto.Config) []pathState {
	var out []pathState
	for _, m := range cfg.Mounts {
		out = append(out, b.pathState(m.Source))
	}
	for _, p := range append(append([]string(nil), cfg.Masks...), cfg.ReadOnly...) {
		if m, ok := initproto.Holding(cfg.Mounts, p); ok {
			out = append(out, b.pathState(m.HostPath(p)))
		}
	}
	return out
}

// pathState is the state of host path p now, as grantPaths records it.
func (b *Backend) pathState(p string) pathState {
	st := pathState{path: p}
	var s unix.Stat_t
	if b.placeholders.lstatUnheld(p, &s) {
		st.exists, st.dev, st.ino, st.mode = true, s.Dev, s.Ino, s.Mode&unix.S_IFMT
		if st.mode != unix.S_IFDIR {
			st.size = s.Size
		}
	}
	return st
}

// samePaths reports whether the host paths recorded in was (by
// grantPaths) are as they were. It checks the paths was names, which
// grantPaths would list again for the same config, without working them
// out again: this runs on a warm call's clock.
//
// The paths of a tree's protected names share a directory, where most of
// them are missing: a listing of it (one open, one getdents) says which
// are, where a lstat each took ~0.8 us apiece; a name the listing shows
// is looked at on its own. Only a directory whose listing names exactly
// what a lookup finds is listed (exactNames); elsewhere every path is
// looked up.
func (b *Backend) samePaths(was []pathState) bool {
	// By directory (with its trailing slash: Split, unlike Dir, cleans
	// nothing, and the paths are clean).
	shared := map[string]int{} // paths per directory
	for _, w := range was {
		dir, _ := filepath.Split(w.path)
		shared[dir]++
	}
	dirs := map[string]map[string]bool{} // listings, nil where not listed
	for _, w := range was {
		dir, name := filepath.Split(w.path)
		names, listed := dirs[dir]
		if !listed && shared[dir] > 1 {
			names = listNames(dir)
			dirs[dir] = names
		}
		if names != nil && !names[name] {
			if w.exists {
				return false
			}
			continue
		}
		if b.pathState(w.path) != w {
			return false
		}
	}
	return true
}

// maxListed is the most names listNames reads from one directory; a larger
// one is looked at name by name.
const maxListed = 4096

// listNames returns the names in host directory dir, or nil when it
// cannot be listed, holds more than maxListed names, or its listing may
// not name what a lookup finds (exactNames). It makes the system calls
// itself: os.Open would also try to register a directory with the poller
// (two more, on a warm call's clock).
func listNames(dir string) map[string]bool {
	fd, err := eintr.Value(func() (int, error) {
		return unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	if !exactNames(fd) {
		return nil
	}
	names := map[string]bool{}
	buf := make([]byte, 8<<10)
	for {
		n, err := eintr.Value(func() (int, error) { return unix.Getdents(fd, buf) })
		if err != nil {
			return nil
		}
		if n == 0 {
			return names
		}
		_, _, list := unix.ParseDirent(buf[:n], -1, nil)
		for _, name := range list {
			names[name] = true
		}
		if len(names) > maxListed {
			return nil
		}
	}
}

// fsCasefoldFL is FS_CASEFOLD_FL: the directory's names fold case.
const fsCasefoldFL = 0x40000000

// exactNames reports whether the directory open at fd lists its entries
// under the names a lookup finds them by, and no others: a local file
// system (localFS) and a directory that does not fold case. Where names
// fold case (ext4, f2fs or tmpfs with casefold; vfat, exfat and SMB,
// which localFS leaves out, as it does FUSE) a file made as ".ENV" is
// found by a lookup of ".env" and listed as ".ENV" alone: a protected
// name missing from the listing may still be there.
func exactNames(fd int) bool {
	if !localFS(fd) {
		return false
	}
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		// No inode flags at all (tmpfs before Linux 6.0): no casefold.
		return errors.Is(err, unix.ENOTTY)
	}
	return flags&fsCasefoldFL == 0
}

// alive reports whether the init of x still waits for its input: its
// stdout has neither hung up (the init exited; nothing else holds the
// pipe's write end before a call starts) nor output nobody asked for.
func alive(x *box) bool {
	rc, err := x.c.stdoutR.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	_ = rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		// poll(2) is never restarted after a signal: the runtime's
		// preemption signal would make a live sandbox look dead, and a
		// loaded machine would discard warm sandboxes for nothing.
		n, err := eintr.Value(func() (int, error) { return pollFds(fds, 0) })
		ok = err == nil && n == 0
	})
	return ok
}

// pollFds is unix.Poll; tests interrupt it.
var pollFds = unix.Poll

// shape is the warm sandboxes of one shape.
type shape struct {
	key      shapeKey
	cfg      *initproto.Config
	l        limits
	ready    []*box
	building int
	// deferred builds wait for refillDelay (timer) before they start.
	deferred int
	timer    *time.Timer
	// extra grows by one, up to maxExtra, each time a call finds no
	// ready sandbox: back-to-back calls then find one built while the
	// previous ran, instead of waiting for a cold build.
	extra int
	// waiters are the calls that found no sandbox ready and wait for
	// one being built, first come first served: a builder hands its
	// sandbox to the first (nil when it has none for them).
	waiters []chan *box
	used    uint64 // pool.clock at the last take or refill
	ctx     context.Context
	cancel  context.CancelFunc
}

// pool holds warm sandboxes: built ahead of time for a shape, each with
// its grant mounts made and its init waiting for the claim (see initproto)
// until one call takes it, then destroyed after that call. A waiting
// sandbox holds no placeholder in the user's tree: the call that claims it
// makes them, and the init protects and locks down only then.
type pool struct {
	b      *Backend
	mu     sync.Mutex
	base   int         // Options.PoolSize
	holds  map[int]int // Pool holders and their sizes
	nextH  int
	closed bool
	grant  string // the grant part of the shapes kept
	shapes map[string]*shape
	clock  uint64
	// work counts the builders and drains running, for drainAll: not a
	// sync.WaitGroup, since a new holder's builds start while a release
	// waits (see teardowns).
	work teardowns
}

// size is the number of warm sandboxes kept per shape; p.mu is held.
func (p *pool) size() int {
	if p.closed {
		return 0
	}
	n := p.base
	for _, s := range p.holds {
		n = max(n, s)
	}
	return n
}

// on reports whether the pool may serve or build sandboxes.
func (p *pool) on() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.size() > 0
}

// take returns a ready warm sandbox of shape k whose grant paths are
// unchanged, or nil. Sandboxes found dead or stale are destroyed. When
// none is ready but one is being built that no other call waits for, it
// waits for that one (at most maxBuildWait, and not past ctx): a build
// under way finishes sooner than a cold one started now, and builds no
// sandbox beyond those the pool makes anyway.
func (p *pool) take(ctx context.Context, k shapeKey) *box {
	for {
		p.mu.Lock()
		sh := p.shapes[k.full]
		if sh == nil || len(sh.ready) == 0 {
			if sh == nil || p.size() == 0 {
				p.mu.Unlock()
				return nil
			}
			p.startDeferred(sh)
			if sh.extra < maxExtra {
				sh.extra++
			}
			if sh.building <= len(sh.waiters) {
				p.mu.Unlock()
				return nil
			}
			x := p.await(ctx, sh)
			if x == nil {
				return nil
			}
			if p.usable(x) {
				return x
			}
			continue
		}
		x := sh.ready[0]
		sh.ready = sh.ready[1:]
		p.clock++
		sh.used = p.clock
		p.mu.Unlock()
		if p.usable(x) {
			return x
		}
	}
}

// await waits, with p.mu held (and released), for a sandbox a builder of
// sh hands over, until maxBuildWait has passed or ctx ends: nil then.
func (p *pool) await(ctx context.Context, sh *shape) *box {
	c := make(chan *box, 1)
	sh.waiters = append(sh.waiters, c)
	p.mu.Unlock()
	t := time.NewTimer(maxBuildWait)
	defer t.Stop()
	select {
	case x := <-c:
		p.b.log.Debug("warm sandbox awaited", "found", x != nil)
		return x
	case <-t.C:
	case <-ctx.Done():
	}
	p.mu.Lock()
	i := slices.Index(sh.waiters, c)
	if i >= 0 {
		sh.waiters = slices.Delete(sh.waiters, i, i+1)
	}
	p.mu.Unlock()
	if i >= 0 {
		return nil
	}
	// A builder handed one over meanwhile: it is this call's, or, when
	// the call is gone, the pool's to destroy.
	x := <-c
	if x != nil && ctx.Err() != nil {
		p.destroy(x)
		return nil
	}
	return x
}

// usable reports whether x, just taken, can serve a call: its init still
// waits and its grant paths are as built. Else it destroys x.
func (p *pool) usable(x *box) bool {
	if alive(x) && p.b.samePaths(x.paths) {
		return true
	}
	p.b.log.Debug("warm sandbox discarded", "pid", x.c.proc.Pid, "alive", alive(x))
	p.destroy(x)
	return false
}

// handOff gives x (nil: nothing) to sh's first waiter, if any, and
// reports whether one took it; p.mu is held.
func (sh *shape) handOff(x *box) bool {
	if len(sh.waiters) == 0 {
		return false
	}
	c := sh.waiters[0]
	sh.waiters = sh.waiters[1:]
	c <- x
	return true
}

// destroy kills a warm sandbox that will not run and removes what it held.
func (p *pool) destroy(x *box) {
	x.kill("drain")
	_, _ = x.c.proc.Wait()
	for {
		if _, ok := x.next(); !ok {
			break
		}
	}
	if err := p.b.teardown(x); err != nil {
		p.b.log.Debug("warm sandbox teardown", "err", err)
	}
}

// refill makes shape k the pool's current one (draining shapes of another
// grant, and the least recently used past maxShapes) and starts building
// sandboxes until it has its size, ready or under way.
func (p *pool) refill(k shapeKey, cfg *initproto.Config, l limits) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.size()
	if n == 0 {
		return
	}
	var old []*shape
	if p.grant != k.grant {
		for key, sh := range p.shapes {
			old = append(old, sh)
			delete(p.shapes, key)
		}
		p.grant = k.grant
		// The spares were made for the old grant's trees: none of its
		// sandboxes is left to claim them (those of this grant's
		// builders, started below, are made after this).
		p.b.placeholders.dropSpares()
	}
	if p.shapes == nil {
		p.shapes = map[string]*shape{}
	}
	sh := p.shapes[k.full]
	if sh == nil {
		ctx, cancel := context.WithCancel(context.Background())
		sh = &shape{key: k, cfg: copyConfig(cfg), l: l, ctx: ctx, cancel: cancel}
		p.shapes[k.full] = sh
		if len(p.shapes) > maxShapes {
			var lru *shape
			for _, s := range p.shapes {
				if s != sh && (lru == nil || s.used < lru.used) {
					lru = s
				}
			}
			delete(p.shapes, lru.key.full)
			old = append(old, lru)
		}
	}
	p.clock++
	sh.used = p.clock
	if len(sh.ready) == 0 {
		p.startDeferred(sh)
	}
	for len(sh.ready)+sh.building+sh.deferred < n+sh.extra {
		if len(sh.ready) == 0 || refillDelay <= 0 {
			sh.building++
			go p.build(sh, p.work.start())
			continue
		}
		sh.deferred++
		if sh.timer == nil {
			sh.timer = time.AfterFunc(refillDelay, func() {
				p.mu.Lock()
				defer p.mu.Unlock()
				p.startDeferred(sh)
			})
		}
	}
	if len(old) > 0 {
		done := p.work.start()
		go func() {
			defer done()
			p.drain(old)
		}()
	}
}

// startDeferred starts sh's deferred builds now, unless sh was drained or
// the pool closed meanwhile; p.mu is held.
func (p *pool) startDeferred(sh *shape) {
	if sh.timer != nil {
		sh.timer.Stop()
		sh.timer = nil
	}
	if p.closed || p.shapes[sh.key.full] != sh || sh.ctx.Err() != nil {
		sh.deferred = 0
		return
	}
	for ; sh.deferred > 0; sh.deferred-- {
		sh.building++
		go p.build(sh, p.work.start())
	}
}

// build makes one warm sandbox for sh and adds it to the pool, unless sh
// was drained meanwhile; then it calls done.
func (p *pool) build(sh *shape, done func()) {
	defer done()
	start := time.Now()
	// The host paths are read before the init builds its mounts (by
	// build) and again once it is ready: a change in between could have
	// been missed.
	// The file placeholders its claim will need, made ahead, unnamed.
	p.b.placeholders.prepare(sh.cfg)
	var x *box
	var err error
	for try := 0; try < 2 && x == nil && sh.ctx.Err() == nil; try++ {
		x, _, err = p.b.build(sh.ctx, &sandbox.Spec{}, copyConfig(sh.cfg), sh.l, start.Add(warmSetupTimeout), start, true)
		if x == nil {
			if err == nil {
				err = errors.New("setup timed out")
			}
			break
		}
		if !p.b.samePaths(x.paths) {
			p.destroy(x)
			x, err = nil, errors.New("the grant's host paths changed during setup")
		}
	}
	p.mu.Lock()
	sh.building--
	keep := false
	if x != nil && p.shapes[sh.key.full] == sh && sh.ctx.Err() == nil {
		if sh.handOff(x) {
			keep = true
		} else if len(sh.ready) < p.size()+sh.extra {
			sh.ready = append(sh.ready, x)
			keep = true
		}
	}
	// Calls waiting for more sandboxes than are still being built
	// build their own.
	for len(sh.waiters) > sh.building {
		sh.handOff(nil)
	}
	p.mu.Unlock()
	if err != nil {
		p.b.log.Debug("warm sandbox not built", "err", err)
	}
	if x != nil && !keep {
		p.destroy(x)
	}
}

// drain destroys the warm sandboxes of shapes no longer kept and stops
// their builders (which destroy what they finish).
func (p *pool) drain(shapes []*shape) {
	var boxes []*box
	p.mu.Lock()
	for _, sh := range shapes {
		sh.cancel()
		if sh.timer != nil {
			sh.timer.Stop()
			sh.timer = nil
		}
		sh.deferred = 0
		boxes = append(boxes, sh.ready...)
		sh.ready = nil
		for sh.handOff(nil) {
		}
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, x := range boxes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.destroy(x)
		}()
	}
	wg.Wait()
}

// drainAll removes every shape, waits for the builders and drains begun
// before it (those of a holder that came since fill that holder's shapes,
// and may start while it waits), and frees the spare inodes made for their
// claims (spare_linux.go).
func (p *pool) drainAll() {
	p.mu.Lock()
	var old []*shape
	for key, sh := range p.shapes {
		old = append(old, sh)
		delete(p.shapes, key)
	}
	p.grant = ""
	p.mu.Unlock()
	p.drain(old)
	p.work.wait()
	// No warm sandbox is left to claim a spare.
	p.b.placeholders.dropSpares()
}

// Pool asks the backend to keep size warm sandboxes of each shape it runs
// in tool mode, until release is called: each Run of a spec without
// Command, TTY or egress proxy then takes a warm sandbox of its shape when
// one is ready, and the pool refills in the background. A shape whose
// calls find no sandbox ready (calls faster than builds) keeps one more
// each time, up to four more than size.
// Several holders may hold the pool (sessions sharing a backend); the size
// is the largest asked for, and the pool is drained when the last holder
// releases it (unless Options.PoolSize keeps it on), the spare inodes made
// for its claims closed with it (spare_linux.go). A size <= 0 holds
// nothing. Release also waits for the teardown of every sandbox whose call
// was answered before its init was reaped (tool mode), so that when it
// returns no process, cgroup or placeholder of a finished call is left.
//
// The pool keeps the shapes of one grant (at most four sets of limits):
// a Run or Prewarm for another grant drains the others.
func (b *Backend) Pool(size int) (release func()) {
	if size <= 0 {
		return b.tearing.wait
	}
	p := &b.pool
	p.mu.Lock()
	if p.holds == nil {
		p.holds = map[int]int{}
	}
	p.nextH++
	h := p.nextH
	p.holds[h] = size
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			delete(p.holds, h)
			off := p.size() == 0
			p.mu.Unlock()
			if off {
				p.drainAll()
			}
			b.tearing.wait()
		})
	}
}

// Prewarm starts filling the pool for spec's shape, draining shapes of
// other grants first (synchronously). It does nothing when no pool is held
// or the spec is not one the pool serves, and when Run would refuse it
// (limits the host cannot enforce).
func (b *Backend) Prewarm(spec *sandbox.Spec) error {
	l := withDefaults(spec.Limits)
	if b.enforceable(spec, l) != nil {
		return nil
	}
	cfg, err := b.config(spec, l)
	if err != nil {
		return fmt.Errorf("prewarming: %w", err)
	}
	k, ok := b.shape(spec, cfg, l)
	if !ok || !b.pool.on() {
		return nil
	}
	p := &b.pool
	p.mu.Lock()
	var old []*shape
	if p.grant != k.grant {
		for key, sh := range p.shapes {
			old = append(old, sh)
			delete(p.shapes, key)
		}
	}
	p.mu.Unlock()
	p.drain(old)
	p.refill(k, cfg, l)
	return nil
}

// Warm reports how many warm sandboxes of spec's shape are ready now.
func (b *Backend) Warm(spec *sandbox.Spec) int {
	l := withDefaults(spec.Limits)
	cfg, err := b.config(spec, l)
	if err != nil {
		return 0
	}
	k, ok := b.shape(spec, cfg, l)
	if !ok {
		return 0
	}
	b.pool.mu.Lock()
	defer b.pool.mu.Unlock()
	if sh := b.pool.shapes[k.full]; sh != nil {
		return len(sh.ready)
	}
	return 0
}

// Close turns the pool off for good and destroys every warm sandbox,
// waiting until their processes, cgroups and placeholders are gone, and
// those of finished calls too. Runs
// after Close still work, each in a fresh sandbox.
func (b *Backend) Close() error {
	b.pool.mu.Lock()
	b.pool.closed = true
	b.pool.mu.Unlock()
	b.pool.drainAll()
	b.closePrestarted()
	b.tearing.wait()
	b.placeholders.closeSpares()
	b.placeholders.closeDepot()
	return nil
}

// copyConfig returns a deep copy of cfg, which may share slices with the
// caller's Spec.
func copyConfig(cfg *initproto.Config) *initproto.Config {
	c := cloneConfig(*cfg)
	if c.Env == nil {
		c.Env = []string{}
	}
	c.Placeholders = nil
	c.Command = nil
	return &c
}
