package linux

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/procid"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/diskguard"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
	"github.com/airlockhq/airlock/wire"
)

// initThreads is added to pids.max for the init's own Go threads.
const initThreads = 16

// Backend runs each Spec in a fresh sandbox. It is safe for concurrent use.
type Backend struct {
	log *slog.Logger
	exe *os.File
	// initFrom is the path of the separately built init (InitCommand)
	// when exe is it; initWhy says why it is not, when New looked for it.
	initFrom string
	initWhy  error
	args     []string
	cg       cgroupHost

	placeholders placeholders
	pool         pool
	lastShape    atomic.Pointer[shapeMemo] // see shape
	tearing      teardowns                 // teardowns after early answers
	diskFloor    int64                     // Options.DiskFloor

	// The init Prestart started for the next cold sandbox (prestart_linux.go).
	preMu     sync.Mutex
	pre       *prestarted
	preClosed bool // Close ran: no more Prestart

	reportOnce sync.Once
	report     sandbox.Report
}

var _ sandbox.Backend = (*Backend)(nil)

// cgroupSeq numbers sandbox cgroups across every Backend of the process,
// whose names share the process id.
var cgroupSeq atomic.Uint64

// New checks the host and prepares the sealed binary. It sweeps cgroups
// left behind by dead brokers.
func New(opts *Options) (*Backend, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Args == nil {
		o.Args = []string{initproto.Arg}
	}
	var (
		exe      *os.File
		initFrom string // the separate init's path, when it is the init
		initWhy  error  // why it is not
	)
	if o.Executable == "" {
		o.Executable = "/proc/self/exe"
		if self, err := os.Executable(); err != nil {
			initWhy = fmt.Errorf("finding this binary: %w", err)
		} else if exe, initFrom, initWhy = separateInit(self); initWhy != nil {
			o.Logger.Debug("the sandbox init is this binary", "separate_init", initFrom, "why", initWhy)
			exe, initFrom = nil, ""
		}
	}
	if exe == nil {
		var err error
		if exe, err = sealedExe(o.Executable); err != nil {
			return nil, err
		}
	}
	b := &Backend{log: o.Logger, exe: exe, args: append([]string(nil), o.Args...), initFrom: initFrom, initWhy: initWhy, diskFloor: o.DiskFloor}
	b.pool.b, b.pool.base = b, max(o.PoolSize, 0)
	b.cg = detectCgroups(o.CgroupParent)
	require := o.Cgroups == CgroupsRequired || o.Cgroups == CgroupsDefault && os.Geteuid() == 0
	if b.cg.version == 0 && require {
		return nil, &sandbox.MissingFeatureError{
			Feature: "cgroups for memory and process limits",
			Reason:  b.cg.reason,
			Fix:     cgroupFix + "; or allow running without them (CgroupsOptional)",
		}
	}
	b.cg.sweep()
	b.placeholders.log = b.log
	if o.StateDir != "" {
		cgJournal := filepath.Join(o.StateDir, cgroupJournalDir)
		sweepCgroupJournals(cgJournal, b.log)
		b.cg.journal(cgJournal)
		b.placeholders.journalDir = filepath.Join(o.StateDir, journalDir)
		b.placeholders.depot = newDepot(o.StateDir)
		sweepJournals(b.placeholders.journalDir, b.log)
	}
	return b, nil
}

type limits struct {
	wall               time.Duration
	mem, out, fsz, tmp int64
	pids, files        int
}

func withDefaults(l sandbox.Limits) limits {
	d := limits{wall: l.Wall, mem: l.MemoryBytes, pids: l.Pids, out: l.OutputBytes, fsz: l.FileBytes, tmp: l.TmpBytes, files: l.OpenFiles}
	if d.wall <= 0 {
		d.wall = DefaultWall
	}
	if d.mem <= 0 {
		d.mem = DefaultMemoryBytes
	}
	if d.pids <= 0 {
		d.pids = DefaultPids
	}
	if d.out <= 0 {
		d.out = DefaultOutputBytes
	}
	if d.fsz <= 0 {
		d.fsz = DefaultFileBytes
	}
	if d.tmp <= 0 {
		d.tmp = DefaultTmpBytes
	}
	if d.files <= 0 {
		d.files = DefaultOpenFiles
	}
	return d
}

// addressSpace is RLIMIT_AS: four times the memory limit but at least
// 8 GiB, because Go, the JVM and V8 reserve far more address space than
// they use. It only matters as the memory bound of last resort when the
// host has no cgroups; the memory cgroup is the real limit.
func addressSpace(mem int64) int64 {
	return max(4*mem, 8<<30)
}

func cleanAbs(p string) bool { return filepath.IsAbs(p) && filepath.Clean(p) == p }

// config is config(spec, l) with the init's disk guard on, at b's floor.
func (b *Backend) config(spec *sandbox.Spec, l limits) (*initproto.Config, error) {
	cfg, err := config(spec, l)
	if err != nil {
		return nil, err
	}
	cfg.DiskGuard, cfg.DiskFloor = true, b.diskFloor
	return cfg, nil
}

// config turns a Spec into the init's configuration, validating paths.
func config(spec *sandbox.Spec, l limits) (*initproto.Config, error) {
	cfg := &initproto.Config{
		Masks: spec.Masks, ReadOnly: spec.ReadOnly, ReadOnlyDirs: spec.ReadOnlyDirs, Env: spec.Env, Cwd: spec.Cwd,
		Command: spec.Command, TTY: spec.TTY, Hostname: "airlock",
		TmpBytes: l.tmp, ShmBytes: l.tmp, TmpInodes: max(1024, l.tmp/1024),
		FileBytes: l.fsz, AddressSpace: addressSpace(l.mem), OpenFiles: l.files,
		Procs: l.pids + initThreads, Seccomp: true,
	}
	if cfg.Env == nil {
		cfg.Env = []string{}
	}
	for _, m := range spec.Mounts {
		t := m.Target
		if t == "" {
			t = m.Source
		}
		if !cleanAbs(m.Source) || !cleanAbs(t) || t == "/" {
			return nil, fmt.Errorf("mount %q -> %q: paths must be clean, absolute and not /", m.Source, t)
		}
		cfg.Mounts = append(cfg.Mounts, initproto.Mount{Source: m.Source, Target: t, Writable: m.Writable})
	}
	for _, p := range append(append([]string(nil), spec.Masks...), spec.ReadOnly...) {
		if !cleanAbs(p) {
			return nil, fmt.Errorf("path %q must be clean and absolute", p)
		}
	}
	if p := spec.Network.ProxySocket; p != "" {
		if !cleanAbs(p) {
			return nil, fmt.Errorf("proxy socket %q must be a clean absolute path", p)
		}
		if spec.Network.ProxyPort < 0 || spec.Network.ProxyPort > 65535 {
			return nil, fmt.Errorf("proxy port %d out of range", spec.Network.ProxyPort)
		}
		cfg.ProxySocket, cfg.ProxyPort = p, spec.Network.ProxyPort
	}
	return cfg, nil
}

// Run runs spec in a fresh sandbox; see sandbox.Backend. With a pool
// (see Pool), a tool-mode spec takes a warm sandbox of its shape when one
// is ready, and starts refilling the pool.
func (b *Backend) Run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	start := time.Now()
	l := withDefaults(spec.Limits)
	if err := b.hostReady(); err != nil {
		return nil, err
	}
	if err := b.enforceable(spec, l); err != nil {
		return nil, err
	}
	cfg, err := b.config(spec, l)
	if err != nil {
		return nil, err
	}
	guard := b.openDiskGuard(cfg.Mounts)
	defer guard.Close()
	if k, ok := b.shape(spec, cfg, l); ok && b.pool.on() {
		defer b.pool.refill(k, cfg, l)
		var input []byte
		input, spec = inputOf(spec)
		for x := b.pool.take(ctx, k); x != nil; x = b.pool.take(ctx, k) {
			taken := time.Now()
			if err := b.claim(ctx, x, taken.Add(l.wall), input); err != nil {
				b.pool.destroy(x)
				if ctx.Err() != nil {
					return nil, fmt.Errorf("sandbox cancelled during setup: %w", ctx.Err())
				}
				b.log.Debug("warm sandbox not claimed", "err", err)
				continue
			}
			claimed := time.Now()
			x.iso.Features = append(x.iso.Features, "warm")
			// The wall time runs from the take, as a cold sandbox's from
			// the start of its setup: the init starts the tool as soon as
			// it is locked down, before the host hears Ready, and a tool
			// that times itself by the call's limit (the shell tool) must
			// not end before the host's kill names the time limit.
			res, err := b.finish(ctx, x, call{spec: spec, out: l.out, start: start, deadline: taken.Add(l.wall), setup: claimed.Sub(start), guard: guard})
			return b.end(x, res, err)
		}
	}
	x, res, err := b.build(ctx, spec, cfg, l, start.Add(l.wall), start, false)
	if x == nil {
		return res, err
	}
	res, err = b.finish(ctx, x, call{spec: spec, out: l.out, start: start, deadline: start.Add(l.wall), setup: time.Since(start), guard: guard})
	return b.end(x, res, err)
}

// unenforcedLimits are the limits a Run without cgroups does not enforce.
var unenforcedLimits = []wire.Limit{sandbox.LimitMemory, sandbox.LimitProcesses}

// enforceable refuses spec when the host gives this broker no cgroup for
// its memory and process limits, unless the spec accepts that. Every Spec
// has both limits (zero means the default), so without cgroups every Spec
// is refused that does not set Limits.AllowUnenforced.
func (b *Backend) enforceable(spec *sandbox.Spec, l limits) error {
	if b.cg.version != 0 || spec.Limits.AllowUnenforced {
		return nil
	}
	return &sandbox.MissingFeatureError{
		Feature:       fmt.Sprintf("a cgroup to enforce the memory limit (%s) and the process limit (%d)", formatBytes(l.mem), l.pids),
		Reason:        b.cg.reason,
		Fix:           cgroupFix + "; " + optOut,
		Unenforceable: append([]wire.Limit(nil), unenforcedLimits...),
	}
}

// optOut says how to run with limits that are not enforced.
const optOut = "or accept memory and process limits that are not enforced: --allow-unenforced-limits, or limits.unenforced = \"allow\" in the grant (every result then says so)"

// formatBytes renders n in the largest binary unit that divides it.
func formatBytes(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// end tears x down after finish returned res and err: at once, or in the
// background when the call was answered early (Close and the release of a
// pool hold wait for those). A teardown that fails at once turns a result
// into that error; one in the background is logged.
func (b *Backend) end(x *box, res *sandbox.Result, err error) (*sandbox.Result, error) {
	if !x.early {
		if terr := b.teardown(x); terr != nil && err == nil {
			return nil, terr
		}
		return res, err
	}
	done := b.tearing.start()
	go func() {
		defer done()
		if err := b.teardown(x); err != nil {
			b.log.Warn("sandbox teardown", "err", err)
		}
	}()
	return res, err
}

// child is one started sandbox init and the host ends of its pipes.
type child struct {
	proc     *os.Process
	cfgW     *os.File
	statusR  *os.File
	stdinW   *os.File // or the pty master
	stdoutR  *os.File // or the pty master
	stderrR  *os.File // nil with a pty
	ptmx     *os.File
	closeOne []*os.File // the child's ends, closed after start
	stat     *os.File   // the init's /proc/PID/stat, in tool mode (initCPU)
	spawned  bool       // started by spawnInit, not forked (os.StartProcess)
}

// box is one sandbox whose setup finished: its init is blocked on its
// stdin (tool mode) or has started the payload (command mode).
type box struct {
	c        *child
	cg       *cgroup
	cfg      *initproto.Config
	held     []string // placeholders this sandbox holds
	first    initproto.Status
	status   *bufio.Scanner // the init's status lines (see next)
	iso      wire.Isolation
	killOnce sync.Once
	why      atomic.Value // string: "time", "output", "ctx", "setup", "drain", "disk", "memory"
	paths    []pathState  // host grant paths as built (pooled sandboxes)
	// counts are the sandbox's shares of the user's per-user kernel
	// objects and rlimits (userCounts), given back once it is gone.
	counts []initproto.UserCount

	rows, cols  uint16 // initial terminal size with cfg.TTY
	stderrApart bool   // with cfg.TTY, stderr is a pipe (Spec.StderrApart)

	waited chan struct{} // closed once the init is reaped
	early  bool          // the call was answered before the init was reaped

	// abandon (abandoned), closed by abandonOutput, makes the relay of a
	// command's output drop what its reader has not taken
	// (sandbox.Abandonable).
	abandon                    chan struct{}
	abandonMade, abandonClosed sync.Once
}

// abandoned returns x's abandon channel, made on first use.
func (x *box) abandoned() chan struct{} {
	x.abandonMade.Do(func() { x.abandon = make(chan struct{}) })
	return x.abandon
}

// abandonOutput has the relay of x's output stop waiting on a reader that
// does not read: the call is over (killed on request, cancelled, or past
// its time limit and sandbox.OutputGrace), and a write blocked on a full pipe held
// it, dead sandbox, placeholders, cgroup and unwritten record, for ever.
func (x *box) abandonOutput() {
	x.abandonClosed.Do(func() { close(x.abandoned()) })
}

func (x *box) kill(reason string) {
	x.killOnce.Do(func() {
		x.why.Store(reason)
		_ = x.c.proc.Kill()
	})
}

// releaseCounts gives the sandbox's share of the user's kernel objects
// back to userCounts, once its processes are gone.
func (x *box) releaseCounts() {
	userCounts.release(x.counts)
	x.counts = nil
}

func (x *box) reason() string {
	r, _ := x.why.Load().(string)
	return r
}

// teardown removes what build made for x: the host ends of its pipes, its
// cgroup (killing anything left) and its placeholders. It returns the
// error of a cgroup that cannot be removed, which fails the run.
func (b *Backend) teardown(x *box) error {
	if x.waited != nil {
		<-x.waited
	}
	tDown := time.Now()
	x.c.closeHost()
	err := x.cg.destroy()
	b.placeholders.release(x.held)
	x.releaseCounts()
	b.log.Debug("sandbox done", "cgroup_teardown_ns", time.Since(tDown).Nanoseconds())
	return err
}

// build makes a sandbox for cfg up to the point where its init reports
// Ready: cgroup, clone, cgroup placement, placeholders, config. It kills
// the sandbox at deadline or when ctx ends. On failure it has torn
// everything down and returns either a Result (the deadline passed during
// setup: a time limit) or an error.
//
// For the pool (warm set), cfg is the sandbox's own copy: it sets
// cfg.Claim, so the init stops before protecting the sandbox (see claim),
// makes no placeholder, and records the state of the grant's host paths
// before the init builds its mounts.
func (b *Backend) build(ctx context.Context, spec *sandbox.Spec, cfg *initproto.Config, l limits, deadline, start time.Time, warm bool) (*box, *sandbox.Result, error) {
	x := &box{cfg: cfg, rows: spec.TTYRows, cols: spec.TTYCols, stderrApart: spec.StderrApart, iso: wire.Isolation{Backend: "linux", Features: []string{"userns", "mountns", "pidns", "netns", "ipcns", "utsns", "cgroupns", "sealed-exe"}}}
	var err error
	var pre *prestarted
	hold := !warm
	if !warm {
		if pre = b.pendingPrestart(); pre != nil {
			// The placeholders are made while the prestarted init may
			// still be starting: it reads no config before they are.
			if x.held, err = b.placeholders.hold(cfg); err != nil {
				// hold returns what it made before the failure: release
				// it, or it stays in the user's tree.
				b.placeholders.release(x.held)
				b.dropPrestarted(pre)
				return nil, nil, err
			}
			hold = false
			if !b.fits(pre, l, cfg.TTY) {
				pre = nil
			}
		}
	}
	if b.cg.version != 0 {
		if pre != nil {
			x.cg = pre.x.cg
		} else {
			x.cg, err = b.newCgroup(l)
			if err != nil {
				b.placeholders.release(x.held)
				return nil, nil, err
			}
		}
		if x.cg.payload != "" {
			cfg.PayloadPids = l.pids
		}
		cfg.Join = ""
		if x.cg.joinsItself() {
			cfg.Join = x.cg.name()
		}
		x.iso.Features = append(x.iso.Features, b.cg.features()...)
	} else {
		// Run let this through only with Limits.AllowUnenforced.
		x.iso.Missing = append(x.iso.Missing, "cgroups")
		x.iso.Unenforced = append([]wire.Limit(nil), unenforcedLimits...)
	}
	if warm {
		// A warm sandbox makes no placeholder until a call claims it.
		cfg.Claim = true
		x.paths = b.grantPaths(cfg)
	}
	x.counts = userCounts.reserve(cfg.Procs)
	applyShares(cfg, x.counts)
	res, err := b.setup(ctx, x, deadline, start, hold, pre)
	if err != nil || res != nil {
		if x.c != nil {
			if terr := b.teardown(x); terr != nil && err == nil {
				res, err = nil, terr
			}
		} else {
			x.releaseCounts()
			b.placeholders.release(x.held)
			if cerr := x.cg.destroy(); cerr != nil {
				b.log.Debug("cgroup teardown", "err", cerr)
			}
		}
		return nil, res, err
	}
	return x, nil, nil
}

// setup starts the init (or, with pre, takes the one Prestart started for
// it) and drives the exchange drawn in package initproto up to the Ready
// status: clone, cgroup placement, config. With hold it makes the
// sandbox's placeholders between the clone and the config, while the
// init's runtime starts: the init reads the config before it mounts
// anything, and what is created on the host's file system after the clone
// is there in the sandbox's copy of the mounts.
func (b *Backend) setup(ctx context.Context, x *box, deadline, start time.Time, hold bool, pre *prestarted) (*sandbox.Result, error) {
	var (
		t0        int64
		placement string
	)
	if pre != nil {
		x.c, t0, placement = pre.x.c, pre.t0, pre.placement
	} else {
		var err error
		if t0, placement, err = b.launch(x); err != nil {
			return nil, err
		}
	}
	c := x.c
	if len(x.cfg.Command) == 0 {
		// Tool mode answers before the init is reaped, with its CPU time
		// read here then (initCPU): opened now, while the pid is this
		// process's unreaped child, it is one pread on the call's clock.
		c.stat, _ = os.Open("/proc/" + strconv.Itoa(c.proc.Pid) + "/stat")
	}
	tStarted := time.Now()
	timer := x.deadlineTimer(deadline)
	defer timer.Stop()
	stopCtx := context.AfterFunc(ctx, func() { x.kill("ctx") })
	defer stopCtx()

	tCgroup := time.Now()
	if hold {
		var err error
		if x.held, err = b.placeholders.hold(x.cfg); err != nil {
			x.kill("setup")
			_, _ = c.proc.Wait()
			return nil, err
		}
	}
	tHeld, tHeldMono := time.Now(), mono()
	if !x.cfg.Claim {
		x.cfg.Deadline = monoAt(deadline)
	}
	cfgJSON, err := json.Marshal(x.cfg)
	if err != nil {
		x.kill("setup")
		_, _ = c.proc.Wait()
		return nil, err
	}
	_, werr := c.cfgW.Write(cfgJSON)
	if !x.cfg.Claim {
		c.cfgW.Close()
		c.cfgW = nil
	}

	x.status = bufio.NewScanner(c.statusR)
	x.status.Buffer(make([]byte, 4<<10), 1<<20)
	first, ok := x.next()
	if !ok || first.Error != "" || first.Ready == x.cfg.Claim || first.Staged != x.cfg.Claim || first.Joined != x.cfg.Join || werr != nil {
		x.kill("setup")
		ps, _ := c.proc.Wait()
		if x.reason() == "time" {
			// The wall time ran out before the payload started.
			res := &sandbox.Result{ExitCode: -1, Signal: int(syscall.SIGKILL), Limit: sandbox.LimitTime, LimitsHit: []wire.Limit{sandbox.LimitTime},
				Duration: time.Since(start), Setup: time.Since(start)}
			res.Isolation = x.iso
			return res, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("sandbox cancelled during setup: %w", ctx.Err())
		}
		if first.Error != "" {
			return nil, setupError(first)
		}
		if !ok {
			return nil, silentExit(ps, werr)
		}
		if werr != nil {
			return nil, fmt.Errorf("sending the sandbox config: %w", werr)
		}
		if first.Joined != x.cfg.Join {
			return nil, unconfirmedJoin(x.cfg.Join)
		}
		return nil, errors.New("sandbox setup: the init's first status was not the one expected")
	}
	if x.cfg.Claim {
		x.staged(first)
		b.log.Debug("sandbox staged", "pid", c.proc.Pid, "spawned", c.spawned, "cgroup_placed", placement, "setup_ns", time.Since(start).Nanoseconds(), "exec_to_main_ns", first.MainAt-t0)
		return nil, nil
	}
	x.ready(first)
	b.log.Debug("sandbox ready", "pid", c.proc.Pid, "spawned", c.spawned, "clone_ns", tStarted.Sub(start).Nanoseconds(),
		"cgroup_ns", tCgroup.Sub(tStarted).Nanoseconds(), "cgroup_placed", placement, "hold_ns", tHeld.Sub(tCgroup).Nanoseconds(), "setup_ns", time.Since(start).Nanoseconds(),
		"exec_to_main_ns", first.MainAt-t0, "config_wait_ns", first.ConfigAt-max(first.MainAt, tHeldMono), "phases", first.Phases)
	return nil, nil
}

// launch clones x's init (x.cg made, x.cfg saying its terminal and
// whether it joins its cgroup itself) and places it in its cgroup where
// the host does that. It returns mono() before the clone and how the init
// was placed.
func (b *Backend) launch(x *box) (t0 int64, placement string, err error) {
	t0 = mono()
	var cgFiles []*os.File
	if x.cg != nil {
		if cgFiles, err = x.cg.initFiles(); err != nil {
			return 0, "", err
		}
	}
	// On cgroup v2 the init is born in its cgroup (CLONE_INTO_CGROUP),
	// which takes no lock that waits for an RCU grace period, as writing
	// its pid into cgroup.procs does (see initproto.JoinFD for v1).
	into := -1
	if x.cg != nil && x.cg.host.version == 2 && len(cgFiles) == 0 {
		if fd, err := unix.Open(x.cg.dirs[0], unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
			into = fd
			defer unix.Close(fd)
		}
	}
	c, err := b.start(x.cfg.TTY, x.stderrApart, x.rows, x.cols, cgFiles, x.cfg.Join != "", into)
	placed := err == nil && into >= 0
	if err != nil && into >= 0 {
		// A kernel without clone3 or CLONE_INTO_CGROUP (before 5.7, some
		// sandboxes' own kernels): started as before, and placed below.
		b.log.Debug("starting the init in its cgroup failed; placing it after the clone", "err", err)
		c, err = b.start(x.cfg.TTY, x.stderrApart, x.rows, x.cols, cgFiles, x.cfg.Join != "", -1)
	}
	if err != nil {
		return 0, "", err
	}
	x.c = c
	placement = "none"
	switch {
	case placed:
		placement = "clone"
	case x.cg != nil && x.cfg.Join != "":
		placement = "init"
	case x.cg != nil:
		placement = "host"
	}
	if placement == "host" {
		if err := x.cg.add(c.proc.Pid); err != nil {
			x.kill("setup")
			_, _ = c.proc.Wait()
			return 0, "", err
		}
	}
	if placement == "init" && c.spawned {
		// The spawner joined the cgroups before the exec and rooted the
		// init's cgroup namespace at them, where the init sees no name:
		// the check that it is in the cgroup named (the init's own, when
		// it joins them) is made here, where the path shows.
		if err := checkSpawnJoin(c.proc.Pid, x.cfg.Join); err != nil {
			x.kill("setup")
			_, _ = c.proc.Wait()
			return 0, "", err
		}
	}
	return t0, placement, nil
}

// checkSpawnJoin checks that the process pid is in the sandbox's cgroup
// name of the memory and pids hierarchies (cgroup v1).
func checkSpawnJoin(pid int, name string) error {
	b, err := readCounterFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return fmt.Errorf("checking the sandbox init's cgroups: %w", err)
	}
	return initproto.JoinedIn(b, name)
}

// newCgroup makes a sandbox's cgroup with the memory and process limits
// of l.
func (b *Backend) newCgroup(l limits) (*cgroup, error) {
	return b.cg.create(cgroupName(procid.Self(), procid.Space(), cgroupSeq.Add(1)), l.mem, l.pids, initThreads)
}

// next returns the init's next status, or false once its status pipe has
// ended (the init exited). It reads in the caller's goroutine, which the
// status wakes at once: a goroutine relaying the statuses over a channel
// made that two wake-ups on a warm call's clock for Ready and two for
// Exit. Only one goroutine reads at a time: setup, then claim, then
// await or destroy.
//
// An Expired status (the init ended the sandbox at its deadline, which
// this process missed: see initproto.Config.Deadline) kills x for its
// time limit, as the deadline's timer does; a Disk status (the init's disk
// guard: Config.DiskGuard) kills it for the disk limit.
func (x *box) next() (initproto.Status, bool) {
	for x.status.Scan() {
		var st initproto.Status
		if json.Unmarshal(x.status.Bytes(), &st) == nil {
			switch {
			case st.Expired:
				x.kill("time")
			case st.Disk:
				x.kill("disk")
			}
			return st, true
		}
	}
	return initproto.Status{}, false
}

// staged records a warm init's Staged status: the features and missing
// features of its build so far, which its Ready leaves out.
func (x *box) staged(st initproto.Status) {
	x.iso.Features = append(x.iso.Features, st.Features...)
	x.iso.Missing = append(x.iso.Missing, st.Missing...)
}

// ready records the init's Ready status.
func (x *box) ready(st initproto.Status) {
	x.first = st
	x.staged(st) // the isolation the claim added, or all of it when built cold
}

// maxClaimInput is the most input a claim sends with it (see inputOf).
const maxClaimInput = 64 << 10

// inputOf returns the input of spec whole, when it is in memory (a
// *bytes.Buffer, *bytes.Reader or *strings.Reader: a Len method) and at
// most maxClaimInput bytes, with a copy of spec that reads it from there;
// else nil and spec. A claim then sends the input with the Claim (see
// claim), and a sandbox that fails its claim leaves it whole for the next.
func inputOf(spec *sandbox.Spec) ([]byte, *sandbox.Spec) {
	r, ok := spec.Stdin.(interface {
		io.Reader
		Len() int
	})
	if !ok || r.Len() > maxClaimInput {
		return nil, spec
	}
	in, err := io.ReadAll(r)
	s := *spec
	s.Stdin = bytes.NewReader(in)
	if err != nil {
		// An in-memory reader does not fail; if one did, the call gets
		// what was read, as a relayed copy would have sent it.
		return nil, &s
	}
	return in, &s
}

// claim hands the warm sandbox x to a call: it makes the placeholders x's
// denied and protected paths need now, sends them in the Claim and waits
// until the init has protected the sandbox and locked it down (Ready).
// When input is not nil and the stdin pipe holds it all, claim writes it
// there and closes the pipe right after it sends the Claim, while the init
// wakes, so the tool reads it as soon as the sandbox is ready, without
// waiting for the host to hear Ready: the init reads its stdin only once
// locked down.
// It kills x at deadline or when ctx ends. On failure the caller destroys
// x, which releases what claim held.
func (b *Backend) claim(ctx context.Context, x *box, deadline time.Time, input []byte) error {
	defer x.watch(ctx, deadline)()
	t0 := time.Now()
	var err error
	var made holdStats
	if x.held, made, err = b.placeholders.holdCounting(x.cfg); err != nil {
		return err
	}
	tHeld := time.Now()
	msg, err := json.Marshal(initproto.Claim{Placeholders: x.cfg.Placeholders, Deadline: monoAt(deadline)})
	if err != nil {
		return err
	}
	// The claim goes first: the init takes ~0.15 ms to wake, which the
	// input's write and the pipes' closing then overlap. The init reads
	// its stdin only once locked down, so the input is there in time, or
	// the tool waits for it as for any input.
	sentAt := mono()
	_, werr := x.c.cfgW.Write(msg)
	if werr == nil && input != nil && pipeHolds(x.c.stdinW, len(input)) {
		if _, err := x.c.stdinW.Write(input); err != nil {
			return fmt.Errorf("sending the call's input: %w", err)
		}
		x.c.stdinW.Close()
		x.c.stdinW = nil
	}
	x.c.cfgW.Close()
	x.c.cfgW = nil
	st, ok := x.next()
	readyAt := mono()
	switch {
	case !ok:
		return errors.New("the warm sandbox's init exited before it was ready")
	case st.Error != "":
		return setupError(st)
	case werr != nil:
		return fmt.Errorf("claiming the warm sandbox: %w", werr)
	case !st.Ready:
		return errors.New("the warm sandbox's init did not report ready")
	}
	x.ready(st)
	b.log.Debug("sandbox claimed", "pid", x.c.proc.Pid, "placeholders", len(x.held), "spares", made.spares, "depot", made.depot, "hold_ns", tHeld.Sub(t0).Nanoseconds(),
		"claim_ns", time.Since(t0).Nanoseconds(), "claim_wake_ns", st.ClaimAt-sentAt, "ready_wake_ns", readyAt-st.SentAt, "phases", st.Phases)
	return nil
}

// call is one call's run of a built sandbox: what finish needs besides it.
type call struct {
	spec     *sandbox.Spec
	out      int64         // the output cap of each stream
	start    time.Time     // when Run began
	deadline time.Time     // when the wall time runs out
	setup    time.Duration // from start until the payload started (Result.Setup)
	guard    *diskguard.Guard
}

// finish runs a built sandbox to its end: it relays the streams and what
// the caller sends (relay, forward), enforces the wall time and the output
// cap, waits (await), and classifies how it ended (result).
func (b *Backend) finish(ctx context.Context, x *box, c call) (*sandbox.Result, error) {
	defer x.watch(ctx, c.deadline)()
	if !hostDiskGuardOff.Load() {
		defer c.guard.Watch(func() {
			b.log.Debug("disk guard: a file system the call may write is below its floor")
			x.kill("disk")
		})()
	}
	defer x.cg.watchTCP(func() {
		b.log.Debug("cgroup v1: the sandbox's TCP buffers passed its memory limit")
		x.kill("memory")
	})()
	relayed := x.relay(c.spec, c.out)
	defer x.forward(c.spec)()
	e, err := x.await()
	if err != nil {
		return nil, err
	}
	tWaited := time.Now()
	if x.c.ptmx == nil && x.c.stdinW != nil {
		x.c.stdinW.Close() // unblocks the stdin copier at its next write
	}
	truncated := relayed()
	logArgs := []any{"run_ns", tWaited.Sub(c.start).Nanoseconds() - c.setup.Nanoseconds(), "early", x.early}
	if e.exit != nil && e.exit.SentAt != 0 {
		logArgs = append(logArgs, "exit_wake_ns", e.at-e.exit.SentAt, "streams_ns", time.Since(tWaited).Nanoseconds(), "phases", e.exit.Phases)
	}
	b.log.Debug("sandbox exited", logArgs...)
	duration := time.Since(c.start)
	reason := x.reason()
	if reason == "ctx" {
		return nil, fmt.Errorf("sandbox cancelled: %w", ctx.Err())
	}
	if reason == "done" && e.at >= monoAt(c.deadline) {
		// The tool answered after the deadline, before the kill for it
		// landed (a timer late on a loaded machine): a tool that times
		// itself by the call's limit (the shell tool) ends just after the
		// deadline, its clock having started once the sandbox was set up.
		// The call ran past its time limit all the same.
		reason = "time"
	}
	res := x.result(e, reason, truncated)
	res.Setup, res.Duration = c.setup, duration
	b.removeCreated(x.cfg.Mounts, x.first.Created)
	return res, nil
}

// watch kills x at deadline, or when ctx ends, until the returned func is
// called.
func (x *box) watch(ctx context.Context, deadline time.Time) (stop func()) {
	timer := x.deadlineTimer(deadline)
	stopCtx := context.AfterFunc(ctx, func() {
		x.kill("ctx")
		x.abandonOutput()
	})
	return func() {
		stopCtx()
		timer.Stop()
	}
}

// deadlineTimer kills x at deadline, for its time limit. The init ends
// the sandbox a little later itself should this not have (see
// initproto.Config.Deadline): a timer of this process does not fire while
// job control has it stopped.
func (x *box) deadlineTimer(deadline time.Time) *time.Timer {
	d := time.Until(deadline)
	if hostDeadlinesOff.Load() {
		d = math.MaxInt64
	}
	return time.AfterFunc(d, func() {
		x.kill("time")
		time.AfterFunc(sandbox.OutputGrace, x.abandonOutput)
	})
}

// hostDeadlinesOff, set by tests, keeps deadlineTimer from firing, as for
// a broker stopped by job control, so that the init's backstop alone ends
// the sandbox.
var hostDeadlinesOff atomic.Bool

// hostDiskGuardOff, set by tests, keeps finish from watching the disk, as
// for a broker stopped by job control, so that the init's guard alone
// stops a call that fills its grant's file system.
var hostDiskGuardOff atomic.Bool

// relay copies the sandbox's output streams to spec's writers, each capped
// at out bytes (past the cap the sandbox is killed), and spec.Stdin to its
// input. The returned func waits until the output streams end, and says
// whether either passed the cap.
func (x *box) relay(spec *sandbox.Spec, out int64) (wait func() (truncated bool)) {
	c := x.c
	var truncated atomic.Bool
	var wg sync.WaitGroup
	copyOut := func(dst io.Writer, src *os.File) {
		defer wg.Done()
		// A command's output goes to the caller's writers (airlock exec's
		// stdout), whose reader may stop reading; a tool's to buffers.
		if len(x.cfg.Command) > 0 {
			dst = sandbox.Abandonable(dst, x.abandoned())
		}
		_, _, _ = sandbox.CopyCapped(dst, src, out, func() {
			truncated.Store(true)
			x.kill("output")
		})
	}
	wg.Add(1)
	go copyOut(spec.Stdout, c.stdoutR)
	if c.stderrR != nil {
		wg.Add(1)
		go copyOut(spec.Stderr, c.stderrR)
	}
	switch {
	case c.stdinW == nil:
		// The claim has sent the input already (see claim).
	case spec.Stdin != nil:
		go func(w *os.File) {
			_, _ = io.Copy(w, spec.Stdin)
			if c.ptmx == nil {
				w.Close()
			}
		}(c.stdinW)
	case c.ptmx == nil:
		c.stdinW.Close()
	}
	return func() bool {
		wg.Wait()
		return truncated.Load()
	}
}

// forward passes on to the sandbox what the caller sends on spec while it
// runs, until the returned func is called: terminal sizes (Resize, with a
// terminal), the stop (Stop) and, in command mode, signals (Signal).
func (x *box) forward(spec *sandbox.Spec) (stop func()) {
	c := x.c
	done := make(chan struct{})
	var wg sync.WaitGroup
	loop := func(f func() bool) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f() {
			}
		}()
	}
	if ch := spec.Resize; ch != nil && c.ptmx != nil {
		loop(func() bool {
			select {
			case s := <-ch:
				_ = setSize(c.ptmx, s.Rows, s.Cols)
				return true
			case <-done:
				return false
			}
		})
	}
	if spec.Stop != nil {
		// The init forwards SIGTERM to every process of the sandbox.
		loop(func() bool {
			select {
			case <-spec.Stop:
				_ = c.proc.Signal(syscall.SIGTERM)
			case <-done:
			}
			return false
		})
	}
	if spec.Signal != nil && len(x.cfg.Command) > 0 {
		// The init, which asked for these three before it said ready,
		// passes SIGINT and SIGHUP to the command and SIGTERM to every
		// process; SIGKILL needs no help.
		loop(func() bool {
			select {
			case s := <-spec.Signal:
				switch s {
				case syscall.SIGKILL:
					x.kill("signal")
					x.abandonOutput()
				case syscall.SIGINT, syscall.SIGHUP, syscall.SIGTERM:
					_ = c.proc.Signal(s)
				}
				return true
			case <-done:
				return false
			}
		})
	}
	return func() {
		close(done)
		wg.Wait()
	}
}

// ending is how a sandbox's payload ended, as await saw it.
type ending struct {
	exit *initproto.Status // the init's Exit status; nil when none came
	ps   *os.ProcessState  // the reaped init; nil when answered early
	cpu  time.Duration     // the tool's CPU time, when answered early
	at   int64             // CLOCK_MONOTONIC time the Exit status was received
	// ended: the init ended the sandbox itself for a limit
	// (Status.Expired or Status.Disk).
	ended bool
}

// await waits for the payload to end. The init is reaped in the
// background (x.waited): in tool mode it reports the tool's exit before
// its namespaces are torn down, and the call is answered then (x.early).
func (x *box) await() (ending, error) {
	tool := len(x.cfg.Command) == 0
	x.waited = make(chan struct{})
	var (
		ps   *os.ProcessState
		werr error
	)
	go func() {
		ps, werr = x.c.proc.Wait()
		close(x.waited)
	}()
	var e ending
	for {
		st, ok := x.next()
		if !ok {
			break
		}
		e.ended = e.ended || st.Expired || st.Disk
		if st.Exit {
			s := st
			e.exit, e.at = &s, mono()
			if tool {
				break
			}
		}
	}
	if tool && e.exit != nil {
		// The init has reaped the tool: its CPU time counts now, before
		// the init is killed and reaped in the background.
		cpu, ok := initCPU(x.c.proc.Pid, x.c.stat)
		e.cpu = cpu
		// Every other process has SIGKILL pending; the init only exits.
		x.kill("done")
		x.early = true
		if !ok {
			// The init exited after its answer and the waiter reaped it
			// before its stat was read (a loaded machine): its rusage,
			// there at once, holds what the stat would have.
			<-x.waited
			if werr == nil {
				e.ps = ps
			}
		}
		return e, nil
	}
	<-x.waited
	if werr != nil {
		return e, fmt.Errorf("waiting for the sandbox: %w", werr)
	}
	e.ps = ps
	return e, nil
}

// result classifies how the sandbox ended: its exit code or signal, and
// the limits it hit (reason is why it was killed, if it was).
func (x *box) result(e ending, reason string, truncated bool) *sandbox.Result {
	res := &sandbox.Result{OutputTruncated: truncated, CPU: e.cpu}
	var ws syscall.WaitStatus
	if e.ps != nil {
		ws, _ = e.ps.Sys().(syscall.WaitStatus)
		res.CPU = rusageCPU(e.ps)
	}
	res.PeakMemory = x.cg.peakMemory()
	switch {
	case e.exit != nil && e.exit.Signal != 0:
		res.ExitCode, res.Signal = -1, e.exit.Signal
	case e.exit != nil:
		res.ExitCode = e.exit.Code
	case e.ended:
		// The init exited to end the sandbox for a limit this process
		// did not enforce in time: killed, as by this process.
		res.ExitCode, res.Signal = -1, int(syscall.SIGKILL)
	case ws.Signaled():
		res.ExitCode, res.Signal = -1, int(ws.Signal())
	default:
		res.ExitCode = ws.ExitStatus()
	}
	hit := sandbox.Hits{Time: reason == "time", Output: truncated, Disk: reason == "disk"}
	if x.cg != nil {
		hit.Memory, hit.Processes = x.cg.memoryHit(), x.cg.pidsMaxHits() > 0
	}
	hit.Memory = hit.Memory || reason == "memory" // TCP buffers past it (watchTCP)
	hit.Apply(res)
	sort.Strings(x.iso.Features)
	res.Isolation = x.iso
	return res
}

// removeCreated removes the placeholder directories the init made in
// writable grants, deepest first, if they are still empty. It works
// through os.Root so a symlink planted by the sandbox cannot redirect it.
func (b *Backend) removeCreated(mounts []initproto.Mount, created []string) {
	for i := len(created) - 1; i >= 0; i-- {
		p := created[i]
		m, ok := entryMount(mounts, p)
		if !ok {
			continue
		}
		root, err := os.OpenRoot(m.Source)
		if err != nil {
			continue
		}
		relp := m.Rel(p)
		if fi, err := root.Lstat(relp); err == nil && (fi.IsDir() || fi.Mode().IsRegular() && fi.Size() == 0) {
			if err := root.Remove(relp); err != nil {
				b.log.Debug("placeholder left", "path", p, "err", err)
			}
		}
		root.Close()
	}
}

// pipeHolds reports whether the empty pipe w can take n bytes without
// blocking.
func pipeHolds(w *os.File, n int) bool {
	rc, err := w.SyscallConn()
	if err != nil {
		return false
	}
	size := 0
	if rc.Control(func(fd uintptr) { size, _ = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0) }) != nil {
		return false
	}
	return n <= size
}

func (c *child) closeHost() {
	for _, f := range []*os.File{c.cfgW, c.statusR, c.stdinW, c.stdoutR, c.stderrR, c.ptmx, c.stat} {
		if f != nil {
			f.Close()
		}
	}
}

// unconfirmedJoin is the error of a sandbox whose init did not confirm
// joining its cgroup name (initproto.Status.Joined): it may run outside
// the sandbox's memory limit, so it is killed before anything runs in it
// (a warm one), or as soon as its first status comes (a cold one).
func unconfirmedJoin(name string) error {
	return fmt.Errorf("the sandbox's init did not confirm it joined its cgroup %s, so its limits may not hold: it was killed (is the init binary, Options.Executable, older than this airlock?)", name)
}

// start clones the init into its namespaces, with a pseudo-terminal as
// its standard streams when tty is set. With join, cgFiles end with
// initproto.JoinFD's file and the init joins its cgroups itself. A
// cgroup >= 0 is a cgroup v2 directory the init is cloned into.
func (b *Backend) start(tty, stderrApart bool, rows, cols uint16, cgFiles []*os.File, join bool, cgroup int) (*child, error) {
	c := &child{closeOne: cgFiles}
	ok := false
	defer func() {
		for _, f := range c.closeOne {
			f.Close()
		}
		if !ok {
			c.closeHost()
		}
	}()
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err != nil {
			return nil, nil, fmt.Errorf("creating a pipe: %w", err)
		}
		return r, w, nil
	}
	cfgR, cfgW, err := pipe()
	if err != nil {
		return nil, err
	}
	c.cfgW = cfgW
	c.closeOne = append(c.closeOne, cfgR)
	stR, stW, err := pipe()
	if err != nil {
		return nil, err
	}
	c.statusR = stR
	c.closeOne = append(c.closeOne, stW)

	var stdio [3]*os.File
	attr := initAttr(tty, cgroup)
	if tty {
		master, slave, err := openPTY(rows, cols)
		if err != nil {
			return nil, err
		}
		c.ptmx, c.stdinW, c.stdoutR = master, master, master
		c.closeOne = append(c.closeOne, slave)
		stdio = [3]*os.File{slave, slave, slave}
		if stderrApart {
			errR, errW, err := pipe()
			if err != nil {
				return nil, err
			}
			c.stderrR = errR
			c.closeOne = append(c.closeOne, errW)
			stdio[2] = errW
		}
	} else {
		inR, inW, err := pipe()
		if err != nil {
			return nil, err
		}
		c.stdinW = inW
		c.closeOne = append(c.closeOne, inR)
		outR, outW, err := pipe()
		if err != nil {
			return nil, err
		}
		c.stdoutR = outR
		c.closeOne = append(c.closeOne, outW)
		errR, errW, err := pipe()
		if err != nil {
			return nil, err
		}
		c.stderrR = errR
		c.closeOne = append(c.closeOne, errW)
		stdio = [3]*os.File{inR, outW, errW}
	}
	argv := append([]string{"airlock"}, b.args...)
	env := []string{"GODEBUG=containermaxprocs=0,updatemaxprocs=0", "GOMAXPROCS=1"}
	// spawnInit joins the cgroups itself before the exec and says so;
	// a forked init is asked to join them.
	spawnEnv, forkEnv := env, env
	if join {
		spawnEnv = append(slices.Clip(env), initproto.JoinEnv+"="+initproto.JoinedBySpawn)
		forkEnv = append(slices.Clip(env), initproto.JoinEnv+"=1")
	}
	// The init's runtime must not keep host cgroup files open to track CPU
	// quota changes, and runs on one P: fewer threads make the all-threads
	// credential changes cheaper (tool mode raises GOMAXPROCS again once
	// locked down).
	exe := "/proc/self/fd/" + strconv.Itoa(initproto.ExeFD)
	files := append([]*os.File{stdio[0], stdio[1], stdio[2], cfgR, stW, b.exe}, cgFiles...)
	var p *os.Process
	if !forkInit {
		p, err = spawnInit(exe, argv, spawnEnv, files, tty, join, cgroup)
		if errors.Is(err, errSpawnUnsupported) {
			b.log.Debug("spawning the init without a fork failed; forking it", "err", err)
			p = nil
		} else if err != nil {
			return nil, err
		}
	}
	c.spawned = p != nil
	if p == nil {
		if p, err = os.StartProcess(exe, argv, &os.ProcAttr{Env: forkEnv, Files: files, Sys: attr}); err != nil {
			return nil, startError(err)
		}
	}
	c.proc = p
	ok = true
	return c, nil
}

// initAttr is how os.StartProcess forks the init (spawnInit does the same
// without the fork): its own namespaces, 0 in its user namespace mapped
// to the broker's uid and gid with setgroups denied, a session of its own
// (with fd 0 as its terminal when tty is set), and, when cgroup >= 0,
// cloned into that cgroup v2 directory.
func initAttr(tty bool, cgroup int) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET |
			syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
		// No Pdeathsig here: the init asks for it itself (inside.Main).
		// Go's child checks after the prctl that getppid() is still the
		// parent's pid; in a new PID namespace getppid() is 0, so the child
		// kills itself, which Linux ignores (a namespace's init cannot be
		// killed from inside) but gVisor does not.
		Setsid: true,
	}
	if cgroup >= 0 {
		attr.UseCgroupFD, attr.CgroupFD = true, cgroup
	}
	if tty {
		attr.Setctty, attr.Ctty = true, 0
	}
	return attr
}

// forkInit, set by tests, starts every init with os.StartProcess (a fork)
// instead of spawnInit.
var forkInit bool

// startError explains a failed clone: user namespaces are the usual cause.
func startError(err error) error {
	if !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.EACCES) {
		return fmt.Errorf("starting the sandbox init: %w", err)
	}
	if errors.Is(err, syscall.EINVAL) {
		// Linux refuses no combination of these flags with EINVAL; a
		// kernel that does not know one of them does.
		return &sandbox.MissingFeatureError{
			Feature: "the namespaces the sandbox is cloned into (user, mount, PID, network, IPC, UTS, cgroup)",
			Reason:  fmt.Sprintf("clone: %v: the kernel or container runtime does not provide one of them (gVisor has no cgroup namespaces)", err),
			Fix:     nsFix,
		}
	}
	reason, fix := usernsDiagnosis()
	return &sandbox.MissingFeatureError{
		Feature: "user namespaces",
		Reason:  fmt.Sprintf("clone: %v; %s", err, reason),
		Fix:     fix,
	}
}

// usernsDiagnosis reads the knobs that disable user namespaces.
func usernsDiagnosis() (reason, fix string) {
	read := func(p string) (string, bool) {
		b, err := os.ReadFile(p)
		return strings.TrimSpace(string(b)), err == nil
	}
	if v, ok := read("/proc/sys/kernel/unprivileged_userns_clone"); ok && v == "0" && os.Geteuid() != 0 {
		return "kernel.unprivileged_userns_clone is 0", "sysctl -w kernel.unprivileged_userns_clone=1"
	}
	if v, ok := read("/proc/sys/user/max_user_namespaces"); ok && v == "0" {
		return "user.max_user_namespaces is 0", "sysctl -w user.max_user_namespaces=15000"
	}
	if v, ok := read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); ok && v == "1" {
		return "AppArmor restricts unprivileged user namespaces", "add an AppArmor profile allowing userns for the airlock binary, or sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
	}
	return "user namespaces seem disabled (seccomp or LSM policy of a container?)", "run on a host or container that allows creating user namespaces (e.g. docker --security-opt seccomp=unconfined, or a pod with the needed securityContext)"
}

// monoAt is t as a CLOCK_MONOTONIC time in ns, comparable with the
// init's (the sandbox has no time namespace).
func monoAt(t time.Time) int64 {
	return mono() + time.Until(t).Nanoseconds()
}

// mono is CLOCK_MONOTONIC in ns, comparable with the init's.
func mono() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}
