package inside

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/sandbox/diskguard"
	"github.com/airlockhq/airlock/internal/sandbox/linux/eintr"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

// Main is the sandbox init: it runs as PID 1 of the sandbox's namespaces,
// reads its configuration from fd 3, builds and locks down the sandbox,
// then runs the command (as a child it reaps) or, with no command, calls
// t.Run in-process with the sandbox's standard streams and a start
// function that starts the tool's command (tool.Env.Start) in the cgroup of
// the call's own processes. It returns the
// process exit code. The protocol with the host is drawn in initproto.
func Main(t Tool) int {
	mainAt := mono()
	// The init dies with the thread of the broker that started it. Asked
	// for here, not by the host's SysProcAttr.Pdeathsig (see start in
	// package linux). Should the broker die before this, the init reads no
	// config (its pipe's writer is gone) or fails its first status write.
	pdeathErr := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0)
	// Nothing in the sandbox may ptrace or read the init's memory.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	// Into the sandbox's cgroups, when the host left that to the init and
	// a constructor did not do it already (checked below: checkJoined).
	joinCgroups()
	cgroupNSRooted = os.Getenv(initproto.CgroupNSEnv) == initproto.RootedBySpawn
	// The sealed binary is not needed once running.
	unix.Close(initproto.ExeFD)
	closeInherited()
	// No descriptor above 2 may reach the payload.
	_ = unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)

	status := os.NewFile(initproto.StatusFD, "status")
	if pdeathErr != nil {
		return fail(status, fmt.Errorf("asking to die with the broker (PR_SET_PDEATHSIG): %w", pdeathErr))
	}
	if brokerGone(initproto.StatusFD) {
		// The broker died before the prctl, so no signal will come: a
		// command that ran now would outlive its time limit.
		return initproto.ExitSetupFailed
	}
	cfgFile := os.NewFile(initproto.ConfigFD, "config")
	var cfg initproto.Config
	dec := json.NewDecoder(cfgFile)
	err := dec.Decode(&cfg)
	if err != nil || !cfg.Claim {
		cfgFile.Close()
	}
	if err != nil {
		return fail(status, fmt.Errorf("reading the sandbox config: %w", err))
	}
	if err := checkJoined(cfg.Join); err != nil {
		return fail(status, err)
	}
	if !cfg.Claim {
		expire(status, cfg.Deadline)
	}
	configAt := mono()
	// toolCtx ends at SIGTERM or SIGINT (tool mode).
	var toolCtx context.Context
	var claimAt int64
	// candidates are placeholderCandidates(&cfg), worked out once, off a
	// warm call's clock: for the tool, and for setup's listing of the
	// placeholders a read-only sandbox's tools skip.
	var candidates []string
	if len(cfg.Command) == 0 {
		candidates = placeholderCandidates(&cfg)
	}
	// claim waits, in a warm sandbox, until a call takes it. What the call
	// would otherwise do first is done before the wait, off its clock: the
	// payload's environment, and, when locked is set (the sandbox is locked
	// down already, so no credential change is left to broadcast to more
	// threads), the tool's GOMAXPROCS. The Staged status carries what st
	// holds so far (features and phases), which Ready then leaves out: a
	// smaller status to encode and decode on the call's clock.
	claim := func(locked bool, st *initproto.Status) error {
		defer cfgFile.Close()
		setEnv(cfg.Env)
		if len(cfg.Command) == 0 {
			toolCtx = toolSignals()
			if locked {
				toolProcs()
			}
			if t.Warm != nil {
				t.Warm()
			}
		}
		staged := &initproto.Status{Staged: true, Joined: cfg.Join, MainAt: mainAt, ConfigAt: configAt,
			Features: st.Features, Missing: st.Missing, Phases: st.Phases}
		if err := send(status, staged); err != nil {
			return err
		}
		st.Features, st.Missing, st.Phases = nil, nil, nil
		var c initproto.Claim
		if err := dec.Decode(&c); err != nil {
			return fmt.Errorf("waiting for the claim: %w", err)
		}
		cfg.Placeholders = c.Placeholders
		expire(status, c.Deadline)
		claimAt = mono()
		return nil
	}
	st, err := setup(&cfg, candidates, claim)
	if err != nil {
		return fail(status, err)
	}
	st.MainAt, st.ConfigAt, st.ClaimAt = mainAt, configAt, claimAt
	st.Ready = true
	if !cfg.Claim {
		st.Joined = cfg.Join // checked by checkJoined above
	}
	// The host may stop the sandbox (SIGTERM) as soon as it hears "ready":
	// ask for the signals first, so none is lost to Go's default action
	// (command mode: passed on to the command; tool mode: they end the
	// tool's context, see toolSignals).
	var sigs chan os.Signal
	if len(cfg.Command) > 0 {
		sigs = make(chan os.Signal, 4)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	} else if toolCtx == nil {
		toolCtx = toolSignals()
	}
	if cfg.DiskGuard {
		guardDisk(status, &cfg)
	}
	st.SentAt = mono()
	if err := send(status, st); err != nil {
		return initproto.ExitSetupFailed
	}

	if !cfg.Claim { // a warm sandbox's claim set it
		setEnv(cfg.Env)
	}
	if len(cfg.Command) == 0 {
		ps := &payloadStart{cfg: &cfg}
		toolProcs()
		tTool := mono()
		code := t.Run(toolCtx, ps.start, cfg.Placeholders, candidates, os.Stdin, os.Stdout, os.Stderr)
		tDone := mono()
		ps.close()
		endTool(status, code, []initproto.Phase{{Name: "to-tool", Nanos: tTool - st.SentAt}, {Name: "tool", Nanos: tDone - tTool}}, tDone)
		return code
	}
	return runPayload(&cfg, status, sigs)
}

// setEnv makes env (NAME=VALUE entries) the whole environment of the
// init, which its payload inherits.
func setEnv(env []string) {
	os.Clearenv()
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			os.Setenv(k, v)
		}
	}
}

// toolProcs gives the tool every CPU: the init runs with GOMAXPROCS=1
// until then, so that its credential changes reach fewer threads. Setting
// it stops the world, so it is done once (asking costs nothing).
func toolProcs() {
	if n := runtime.NumCPU(); runtime.GOMAXPROCS(0) != n {
		runtime.GOMAXPROCS(n)
	}
}

// Tool is what the init of a tool-mode sandbox (no Command) runs.
type Tool struct {
	// Run runs the call in-process: it reads the call from stdin and
	// answers on stdout; start starts a command the tool runs
	// (tool.Env.Start); hidden are the sandbox's placeholders
	// (tool.Env.Hidden: what PlaceholderList lists, when the init writes
	// it), and candidates every path where a call beside it may make one
	// while it runs (tool.Env.Candidates: placeholderCandidates). ctx ends
	// when the init gets SIGTERM or SIGINT; SIGPIPE is notified, so a
	// write to a closed pipe fails with EPIPE. It returns the exit code.
	Run func(ctx context.Context, start func(func() error) error, hidden, candidates []string, stdin io.Reader, stdout, stderr io.Writer) int
	// Warm, when set, runs in a warm sandbox before it waits for its
	// claim, so that the call does not pay for the first use of what
	// every call does (decoding its input, encoding its answer). The
	// sandbox is not locked down yet: Warm must touch no file of the
	// sandbox's and write none (runner.Warm reads one of its own process
	// in /proc).
	Warm func()
}

// placeholderCandidates lists the sandbox paths where airlock makes
// placeholders for cfg's grant: each denied and protected path inside a
// mount, and each directory above it up to the mount. A read-only
// sandbox's tools check these for the mark when they meet one, since a
// call beside it may make a placeholder after its claim listed them.
func placeholderCandidates(cfg *initproto.Config) []string {
	return placeholderPaths(cfg.Mounts, append(slices.Clone(cfg.Masks), cfg.ReadOnly...), true)
}

// placeholderPaths returns, once each, those of paths inside one of
// mounts and, with above, each directory above one up to its mount.
func placeholderPaths(mounts []initproto.Mount, paths []string, above bool) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range paths {
		m, ok := initproto.Holding(mounts, p)
		if !ok {
			continue
		}
		for q := p; q != m.Target && q != "/" && !seen[q]; q = filepath.Dir(q) {
			seen[q] = true
			out = append(out, q)
			if !above {
				break
			}
		}
	}
	return out
}

// toolSignals asks for SIGTERM, SIGINT and SIGPIPE for the rest of the
// init's life (tool mode) and returns a context that ends at the first
// SIGTERM or SIGINT: the tool's, so a stop cancels it. With SIGPIPE
// notified (not ignored, which children would inherit), a broker that
// stopped reading makes a write fail with EPIPE instead of killing the
// init silently. A warm sandbox asks before it waits for its claim: the
// runtime starts its signal threads then, and each signal enabled is a
// round trip to one of them, none of it on the call's clock.
func toolSignals() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT, syscall.SIGPIPE)
	go func() {
		for s := range c {
			if s != syscall.SIGPIPE {
				cancel()
			}
		}
	}()
	return ctx
}

// endTool ends a tool-mode sandbox early: it kills every other process of
// the sandbox (they cannot run on once SIGKILL is pending), closes the
// standard streams and reports the tool's exit code, so the host can
// answer the call without waiting for the namespaces to be torn down.
// phases time the run so far; the end is timed from tDone.
func endTool(status *os.File, code int, phases []initproto.Phase, tDone int64) {
	_ = unix.Kill(-1, unix.SIGKILL)
	os.Stdin.Close()
	os.Stdout.Close()
	os.Stderr.Close()
	now := mono()
	phases = append(phases, initproto.Phase{Name: "end", Nanos: now - tDone})
	_ = send(status, &initproto.Status{Exit: true, Code: code, Phases: phases, SentAt: now})
	status.Close()
}

// sendMu keeps the status lines whole: expire sends from a timer's
// goroutine, and a line longer than PIPE_BUF is not written at once.
var sendMu sync.Mutex

func send(w io.Writer, st *initproto.Status) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	sendMu.Lock()
	defer sendMu.Unlock()
	_, err = w.Write(append(b, '\n'))
	return err
}

// exitExpired is the init's exit code when it ended the sandbox for a
// limit (expire, guardDisk): 128+SIGKILL, as a sandbox the host killed.
const exitExpired = 128 + int(unix.SIGKILL)

// expireSendWait bounds how long expire waits to report before it exits:
// the status pipe has room for far more than the few lines an init sends,
// but a full one must not keep the sandbox alive.
const expireSendWait = 100 * time.Millisecond

// expire ends the sandbox initproto.ExpireGrace after deadline (a
// CLOCK_MONOTONIC time in ns; 0 is none), should the host not have killed
// it by then: it reports Status.Expired and exits, and the kernel kills
// every other process of the PID namespace with it. The host kills the
// sandbox at the deadline from its own process; this is the backstop for
// a host process that runs no timer because job control stopped it (a
// SIGTTOU for relaying the sandbox's own output to a terminal set to
// tostop, a SIGTSTP, a SIGSTOP). Nothing in the sandbox can stop or delay
// the init: signals from inside its PID namespace reach it only through
// handlers it installed (SIGSTOP never), and ptrace is refused.
func expire(status *os.File, deadline int64) {
	if deadline == 0 {
		return
	}
	time.AfterFunc(time.Duration(deadline-mono())+initproto.ExpireGrace, func() {
		end(status, &initproto.Status{Expired: true})
	})
}

// guardDisk watches the file systems of cfg's writable mounts, as the
// host's disk guard does (package diskguard), and ends the sandbox,
// reporting Status.Disk, when one is drawn below its floor: the backstop
// of the host's guard, which does not run while job control has the
// broker stopped. It is called once the sandbox is built, before the
// payload runs, so what the payload writes counts as the call's own.
func guardDisk(status *os.File, cfg *initproto.Config) {
	var targets []string
	for _, m := range cfg.Mounts {
		if m.Writable {
			targets = append(targets, m.Target)
		}
	}
	if len(targets) == 0 {
		return
	}
	diskguard.Open(targets, cfg.DiskFloor).Watch(func() {
		end(status, &initproto.Status{Disk: true})
	})
}

// end ends the sandbox for a limit the init enforces itself: it sends st
// (waiting at most expireSendWait) and exits, and the kernel kills every
// other process of the PID namespace with it.
func end(status *os.File, st *initproto.Status) {
	st.SentAt = mono()
	sent := make(chan struct{})
	go func() {
		_ = send(status, st)
		close(sent)
	}()
	select {
	case <-sent:
	case <-time.After(expireSendWait):
	}
	os.Exit(exitExpired)
}

func fail(status *os.File, err error) int {
	st := &initproto.Status{Error: err.Error()}
	var r *refusal
	if errors.As(err, &r) {
		st.Step = r.step
	}
	_ = send(status, st)
	return initproto.ExitSetupFailed
}

// A refusal is a setup step the host refused with EPERM, for want of a
// feature the host side can name (initproto.Status.Step).
type refusal struct {
	step string
	err  error
}

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

// refused tags err with step when the host refused it (EPERM).
func refused(step string, err error) error {
	if !errors.Is(err, unix.EPERM) {
		return err
	}
	return &refusal{step: step, err: err}
}

// setup builds the sandbox and applies every restriction, in order. With
// cfg.Claim it calls claim once everything the grant alone decides is
// built, and protects and locks down only when claim returns: until then
// the init keeps its capabilities (in its own user namespace) and the host
// keeps no placeholder in the user's tree for it.
// candidates, when not nil, are placeholderCandidates(cfg).
func setup(cfg *initproto.Config, candidates []string, claim func(locked bool, st *initproto.Status) error) (*initproto.Status, error) {
	st := &initproto.Status{}
	early, ns, _ := earlyLockdown()
	spawned := !early && lockedAtSpawn()
	switch {
	case early:
		st.Phases = append(st.Phases, initproto.Phase{Name: "bounding-before-runtime", Nanos: ns})
	case spawned:
		st.Phases = append(st.Phases, initproto.Phase{Name: "bounding-at-spawn"})
	}
	t := time.Now()
	phase := func(name string) {
		now := time.Now()
		st.Phases = append(st.Phases, initproto.Phase{Name: name, Nanos: now.Sub(t).Nanoseconds()})
		t = now
	}
	b, err := build(cfg)
	if err != nil {
		return nil, err
	}
	defer b.close()
	b.candidates = candidates
	if b.newAPI {
		st.Features = append(st.Features, "mount-api")
	}
	phase("mounts")
	if err := b.pivot(); err != nil {
		return nil, err
	}
	st.Features = append(st.Features, "pivot_root")
	phase("pivot")
	// The init is in its cgroups by now (the host placed it, or it joined
	// them itself: initproto.JoinFD): a cgroup namespace made here is
	// rooted at them, so /proc/self/cgroup shows "/" (and "/payload"), not
	// the broker's cgroup path and pid, which the one made at the clone
	// showed. Every thread's, since namespaces are per thread and any may
	// fork; after the pivot, so the all-thread call finds this process's
	// threads in the sandbox's own /proc. The spawner made it already when
	// it put the init in its cgroups before the exec.
	if !cgroupNSRooted {
		if err := allThreads(unix.SYS_UNSHARE, unix.CLONE_NEWCGROUP, 0, 0); err != nil {
			return nil, fmt.Errorf("rooting the cgroup namespace at the sandbox's cgroups: %w", err)
		}
	}
	if err := unix.Sethostname([]byte(cfg.Hostname)); err != nil {
		return nil, refused(initproto.StepHostname, fmt.Errorf("setting the hostname: %w", err))
	}
	if err := loopbackUp(); err != nil {
		return nil, err
	}
	if cfg.ProxySocket != "" && cfg.ProxyPort > 0 {
		if err := forwardProxy(cfg.ProxyPort); err != nil {
			return nil, err
		}
		st.Features = append(st.Features, "egress-proxy")
	}
	phase("net")
	if err := setRlimits(cfg); err != nil {
		return nil, err
	}
	st.Features = append(st.Features, "rlimits")
	// Nothing the init still has to do needs the bounding set, or gaining
	// privileges at exec: these go before a warm sandbox waits, and, in a
	// build with cgo, before the Go runtime started (earlyLockdown), or
	// before the exec, by the host's spawner (lockedAtSpawn).
	if _, _, err := earlyLockdown(); err != nil {
		return nil, err
	} else if !early && !spawned {
		if err := dropBounding(lastCap()); err != nil {
			return nil, err
		}
		if err := noNewPrivs(); err != nil {
			return nil, err
		}
	}
	phase("bounding")
	// A warm sandbox whose every mount is read-only (a tool that changes
	// nothing) needs no placeholder from its claim, and nothing in it can
	// change what protect finds: it is protected and locked down before it
	// waits, and its claim only lists the placeholders the calls beside it
	// hold then (listMarkedLocked). Any other waits here, before protect.
	prelock := cfg.Claim && !anyWritable(cfg.Mounts)
	// A warm sandbox makes its Landlock ruleset now, when its rules'
	// paths already resolve to what they will, so that only enforcing it
	// is left for the claim.
	var llr *landlockRuleset
	if cfg.Claim && !prelock && earlyLandlock(cfg) {
		if llr, err = newLandlockRuleset(cfg); err != nil {
			return nil, err
		}
		defer llr.close()
		phase("landlock-ruleset")
	}
	if cfg.Claim && !prelock {
		if err := claim(false, st); err != nil {
			return nil, err
		}
		t = time.Now() // the wait is no setup phase
	}
	// Denied paths are hidden and protected paths made read-only, then
	// every ancestor of them inside a writable grant is pinned.
	if err := b.protect(); err != nil {
		return nil, err
	}
	st.Created = b.created
	if err := b.seal(cfg.Cwd, cfg.Mounts); err != nil {
		return nil, err
	}
	phase("protect")
	if err := clearCaps(); err != nil {
		return nil, err
	}
	st.Features = append(st.Features, "caps-dropped", "no_new_privs")
	phase("caps")
	if llr == nil {
		if llr, err = newLandlockRuleset(cfg); err != nil {
			return nil, err
		}
		defer llr.close()
	}
	ll, err := llr.enforce()
	if err != nil {
		return nil, err
	}
	if ll != "" {
		st.Features = append(st.Features, strings.Fields(ll)...)
	} else {
		st.Missing = append(st.Missing, "landlock")
	}
	if !slices.Contains(st.Features, unixFeature) {
		st.Missing = append(st.Missing, unixFeature)
	}
	phase("landlock")
	ok, err := installSeccomp()
	if err != nil {
		return nil, fmt.Errorf("installing the seccomp filter: %w", err)
	}
	if ok {
		st.Features = append(st.Features, "seccomp")
	} else {
		if cfg.Seccomp {
			return nil, fmt.Errorf("installing the seccomp filter: this binary has none")
		}
		st.Missing = append(st.Missing, "seccomp")
	}
	phase("seccomp")
	if prelock {
		// What the listing needs besides the claim is ready before it
		// (the candidates since Main).
		closeRoot, err := b.openRoot()
		if err != nil {
			return nil, err
		}
		defer closeRoot()
		if err := claim(true, st); err != nil {
			return nil, err
		}
		t = time.Now()
		if len(cfg.Placeholders) != 0 {
			return nil, errors.New("a read-only warm sandbox was claimed with placeholders: it holds none")
		}
		if err := b.listMarkedLocked(); err != nil {
			return nil, err
		}
		phase("listed")
	}
	return st, nil
}

// closeInherited closes descriptors above the protocol's that survived the
// exec (leaked by the broker's own parent, say). Everything the Go runtime
// opens is close-on-exec, so an fd without FD_CLOEXEC was inherited. The
// host passes its own files up to initproto.LastFD, or none there.
func closeInherited() {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= initproto.LastFD {
			continue
		}
		if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && fl&unix.FD_CLOEXEC == 0 {
			unix.Close(fd)
		}
	}
}

// mono is CLOCK_MONOTONIC in ns, comparable with the host's.
func mono() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// brokerGone reports whether the reader of the write end fd has gone: the
// broker holds the status pipe's read end for as long as the sandbox
// lives, so its end closed means the broker has died.
func brokerGone(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	n, err := eintr.Value(func() (int, error) { return unix.Poll(fds, 0) })
	return err == nil && n > 0 && fds[0].Revents&unix.POLLERR != 0
}
