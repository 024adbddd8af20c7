package podman

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/procid"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/diskguard"
	"github.com/airlockhq/airlock/internal/sandbox/podman/inside"
	"github.com/airlockhq/airlock/wire"
)

// Backend runs each Spec in a fresh Podman container. It is safe for
// concurrent use.
type Backend struct {
	log     *slog.Logger
	podman  string
	runtime string
	image   string
	exe     string
	stage   string // root-only directory holding each call's staging
	hooks   string // the OCI hooks directory of every container (writeHooks)
	userns  int    // the container's idmapping, for what the broker stages
	holds   placeholders

	// owners holds a user namespace per owner of a granted tree
	// (ownerNS), at most maxOwners.
	ownersMu   sync.Mutex
	owners     map[[2]uint32]int
	ownersGone bool // Close released them
	broker     string
	opts       Options
	seq        atomic.Uint64
	ran        atomic.Int64 // ns from start to podman's exit, last call (for the debug log)
	closing    sync.Once

	reportOnce sync.Once
	report     sandbox.Report
}

var _ sandbox.Backend = (*Backend)(nil)

// fixInstall says how to get Podman working here.
const fixInstall = "install podman and runc (apt-get install podman runc) and run airlock as root"

// New checks the host (podman, the runtime, a static airlock binary,
// idmapped mounts) and removes the containers of brokers that died.
func New(opts *Options) (*Backend, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := grant.CheckImage(o.Image); err != nil {
		if pinned := pinnedFor(o.Podman, o.Runtime, o.Image); pinned != "" {
			return nil, fmt.Errorf("%w; this host has it as %s", err, pinned)
		}
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Runtime == "" {
		o.Runtime = "runc"
	}
	b := &Backend{log: o.Logger, runtime: o.Runtime, image: o.Image, userns: -1, opts: o}
	var err error
	if b.podman, err = findPodman(o.Podman); err != nil {
		return nil, err
	}
	if b.exe, err = staticExe(o.Executable); err != nil {
		return nil, err
	}
	if _, err := exec.LookPath(b.runtime); err != nil {
		return nil, &sandbox.MissingFeatureError{Feature: "the OCI runtime " + b.runtime, Reason: err.Error(),
			Fix: "apt-get install " + b.runtime + " (runc works where crun refuses the host's cgroup layout)"}
	}
	if err := b.podmanCmd("image", "exists", b.image).Run(); err != nil {
		return nil, &RunError{Reason: "image " + b.image + " is not on this host",
			Fix: "load it (podman pull, podman load or podman import), then pin it by the digest podman reports"}
	}
	if os.Geteuid() != 0 {
		return nil, &sandbox.MissingFeatureError{Feature: "root for the Podman backend", Reason: "idmapped mounts of the grant's paths need CAP_SYS_ADMIN", Fix: "run airlock as root, or use the native backend"}
	}
	if err := checkSubIDs(subIDFiles); err != nil {
		return nil, err
	}
	if b.userns, err = usernsFD(); err != nil {
		return nil, err
	}
	parent := o.StateDir
	if parent == "" {
		parent = os.TempDir()
	}
	if err := os.MkdirAll(parent, 0o700); err != nil {
		b.Close()
		return nil, fmt.Errorf("making the state directory: %w", err)
	}
	sweepStages(parent, b.log)
	sweepPlaceholders(parent, b.log)
	b.holds.journalDir = filepath.Join(parent, journalDir)
	if b.stage, err = os.MkdirTemp(parent, stageName(procid.Self())); err != nil {
		b.Close()
		return nil, fmt.Errorf("making the staging directory: %w", err)
	}
	if b.hooks, err = writeHooks(b.stage); err != nil {
		b.Close()
		return nil, err
	}
	b.broker = string(procid.Self())
	b.sweep()
	return b, nil
}

// Close releases the backend's user namespace and staging directory.
func (b *Backend) Close() error {
	b.closing.Do(func() {
		if b.userns >= 0 {
			unix.Close(b.userns)
		}
		b.ownersMu.Lock()
		for _, fd := range b.owners {
			unix.Close(fd)
		}
		b.owners, b.ownersGone = nil, true
		b.ownersMu.Unlock()
		if b.stage != "" {
			removeStage(b.stage)
		}
		b.holds.closeJournal()
	})
	return nil
}

// maxOwners bounds the user namespaces kept for the owners of granted
// trees (a grant names a few trees, most of one owner).
const maxOwners = 64

// ownerNS returns the user namespace whose idmapping makes a tree owned by
// uid and gid container root's (ownerMap): made once per owner, kept until
// Close. Host root's trees use the container's own mapping.
func (b *Backend) ownerNS(uid, gid uint32) (int, error) {
	if uid == 0 && gid == 0 {
		return b.userns, nil
	}
	b.ownersMu.Lock()
	defer b.ownersMu.Unlock()
	key := [2]uint32{uid, gid}
	if fd, ok := b.owners[key]; ok {
		return fd, nil
	}
	if b.ownersGone {
		return -1, errors.New("the Podman backend is closed")
	}
	if b.owners == nil {
		b.owners = map[[2]uint32]int{}
	}
	if len(b.owners) >= maxOwners {
		return -1, fmt.Errorf("its owner %d:%d is one more than the %d owners of granted trees one Podman backend maps", uid, gid, maxOwners)
	}
	fd, err := usernsWith(ownerMap(uid, IDCount), ownerMap(gid, IDCount))
	if err != nil {
		return -1, err
	}
	b.owners[key] = fd
	return fd, nil
}

func findPodman(p string) (string, error) {
	if p == "" {
		p = "podman"
	}
	path, err := exec.LookPath(p)
	if err != nil {
		return "", &sandbox.MissingFeatureError{Feature: "podman", Reason: err.Error(), Fix: fixInstall}
	}
	return path, nil
}

// staticExe resolves the airlock binary and checks it has no ELF
// interpreter, so it runs in any image.
func staticExe(p string) (string, error) {
	if p == "" {
		var err error
		if p, err = os.Executable(); err != nil {
			return "", fmt.Errorf("finding the airlock binary: %w", err)
		}
	}
	p, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("resolving the airlock binary: %w", err)
	}
	f, err := elf.Open(p)
	if err != nil {
		return "", fmt.Errorf("reading the airlock binary %q: %w", p, err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return "", &sandbox.MissingFeatureError{Feature: "a static airlock binary for the container", Reason: p + " is dynamically linked",
				Fix: "build airlock with CGO_ENABLED=0 (go build ./cmd/airlock)"}
		}
	}
	return p, nil
}

// pinnedFor returns ref pinned by the digest of the image this host has
// under that name, or "" when it has none.
func pinnedFor(podman, runtime, ref string) string {
	if ref == "" || strings.Contains(ref, "@") {
		return ""
	}
	if podman == "" {
		podman = "podman"
	}
	if runtime == "" {
		runtime = "runc"
	}
	out, err := exec.Command(podman, "--runtime", runtime, "image", "inspect", "--format", "{{.Digest}}", ref).Output()
	d := strings.TrimSpace(string(out))
	if err != nil || !strings.HasPrefix(d, "sha256:") {
		return ""
	}
	name := ref
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name = name[:i]
	}
	if grant.CheckImage(name+"@"+d) != nil {
		return ""
	}
	return name + "@" + d
}

// sweep removes the containers labelled by a broker that is gone.
func (b *Backend) sweep() {
	out, err := exec.Command(b.podman, "--runtime", b.runtime, "ps", "--all", "--filter", "label="+LabelBroker,
		"--format", `{{.ID}} {{index .Labels "`+LabelBroker+`"}}`).Output()
	if err != nil {
		b.log.Debug("listing airlock containers", "err", err)
		return
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		id, owner, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if procid.ID(owner).Alive() {
			continue // its broker lives
		}
		if err := exec.Command(b.podman, "--runtime", b.runtime, "rm", "--force", "--ignore", id).Run(); err != nil {
			b.log.Warn("removing a dead broker's container", "id", id, "err", err)
		}
	}
}

type limits struct {
	wall               time.Duration
	mem, out, fsz, tmp int64
	pids, files        int
}

func withDefaults(l sandbox.Limits) limits {
	d := limits{wall: l.Wall, mem: l.MemoryBytes, pids: l.Pids, out: l.OutputBytes, fsz: l.FileBytes, tmp: l.TmpBytes, files: l.OpenFiles}
	def := func(v *int64, x int64) {
		if *v <= 0 {
			*v = x
		}
	}
	if d.wall <= 0 {
		d.wall = DefaultWall
	}
	def(&d.mem, DefaultMemoryBytes)
	def(&d.out, DefaultOutputBytes)
	def(&d.fsz, DefaultFileBytes)
	def(&d.tmp, DefaultTmpBytes)
	if d.pids <= 0 {
		d.pids = DefaultPids
	}
	if d.files <= 0 {
		d.files = DefaultOpenFiles
	}
	return d
}

// features are what every container of this backend has.
var features = []string{"cap-drop-all", "cgroups", "idmapped-mounts", "ipcns", "mountns", "netns", "no-new-privs", "pidns", "read-only-root", "seccomp", "userns", "utsns"}

// Run runs spec in a fresh container; see sandbox.Backend.
func (b *Backend) Run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	start := time.Now()
	if spec.TTY {
		return nil, errors.New("the podman backend gives no terminal: use the native backend for a terminal")
	}
	l := withDefaults(spec.Limits)
	dir, err := os.MkdirTemp(b.stage, "call-")
	if err != nil {
		return nil, fmt.Errorf("staging the call: %w", err)
	}
	st, err := b.build(spec, dir)
	staged := time.Since(start)
	if err != nil {
		removeStage(dir)
		return nil, err
	}
	defer func() {
		st.release()
		b.holds.release(st.held)
	}()
	name := fmt.Sprintf("airlock-%d-%d", os.Getpid(), b.seq.Add(1))
	inv := &Invocation{Runtime: b.runtime, HooksDir: b.hooks, Name: name, Broker: b.broker, Image: b.image, Exe: st.exe, Binds: st.binds,
		ProxySocket: st.proxy, ProxyPort: spec.Network.ProxyPort, Wall: l.wall, MemoryBytes: l.mem, Pids: l.pids,
		FileBytes: l.fsz, TmpBytes: l.tmp, OpenFiles: l.files, Cwd: spec.Cwd, Command: spec.Command}
	args, err := Args(inv)
	if err != nil {
		return nil, err
	}
	env, err := inside.EncodeEnv(spec.Env)
	if err != nil {
		return nil, err
	}
	res, err := b.run(ctx, spec, args, env, name, dir, l, start)
	b.log.Debug("podman call done", "name", name, "stage_ns", staged.Nanoseconds(), "run_ns", b.ran.Load(), "total_ns", time.Since(start).Nanoseconds())
	return res, err
}

// run starts podman and relays, enforces and classifies; env is the
// container's environment (inside.EncodeEnv), written on the init's
// environment pipe. dir is the
// call's own staging directory: podman runs there, so conmon's record of
// an OOM kill in the container (a file "oom" in its working directory)
// lands there, and only for this call.
func (b *Backend) run(ctx context.Context, spec *sandbox.Spec, args []string, env []byte, name, dir string, l limits, start time.Time) (*sandbox.Result, error) {
	// The disk guard's record of the writable grants' space comes before
	// the container runs, so that all it writes counts.
	var writable []string
	for _, m := range spec.Mounts {
		if m.Writable {
			writable = append(writable, m.Source)
		}
	}
	guard := diskguard.Open(writable, 0)
	defer guard.Close()
	cmd := exec.Command(b.podman, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	// The stop and the signals go to the init on a pipe, not as signals
	// (podman kill): the kernel drops a SIGTERM sent to the container's
	// PID 1 before the init's Go runtime installed its handler, and
	// podman kill succeeds then, so a stop asked for while the container
	// started was lost. A byte in the pipe waits until the init reads it.
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("making the control pipe: %w", err)
	}
	// The init reports the limits the container hit on the report pipe.
	repR, repW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return nil, fmt.Errorf("making the report pipe: %w", err)
	}
	// The container's environment goes to the init on a pipe of its
	// own, not on podman's command line.
	envR, envW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		repR.Close()
		repW.Close()
		return nil, fmt.Errorf("making the environment pipe: %w", err)
	}
	cmd.ExtraFiles = []*os.File{ctlR, repW, envR} // ControlFD, ReportFD, EnvFD
	err = cmd.Start()
	ctlR.Close()
	repW.Close()
	envR.Close()
	if err != nil {
		ctlW.Close()
		repR.Close()
		envW.Close()
		return nil, &RunError{Reason: err.Error(), Fix: fixInstall}
	}
	// Written while the container starts (more than a pipe holds would
	// block until the init reads it); a container that never starts
	// closes the pipe's other end, which ends the write.
	go func() {
		defer envW.Close()
		_, _ = envW.Write(env)
	}()
	reported := make(chan []string, 1)
	go func() {
		defer repR.Close()
		b, _ := io.ReadAll(io.LimitReader(repR, 4096))
		reported <- strings.Fields(string(b))
	}()
	var ctlMu sync.Mutex
	send := func(s syscall.Signal) {
		ctlMu.Lock()
		defer ctlMu.Unlock()
		if ctlW == nil {
			return // podman run has exited
		}
		// The init reads as it goes: a full pipe (64 KiB of signals
		// not yet read) drops this one rather than block.
		_ = ctlW.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = ctlW.Write([]byte{byte(s)})
	}
	defer func() {
		ctlMu.Lock()
		ctlW.Close()
		ctlW = nil
		ctlMu.Unlock()
	}()
	setup := time.Since(start)
	exited := make(chan struct{}) // closed once podman run has exited
	var why atomic.Value
	var killOnce sync.Once
	kill := func(reason string) {
		killOnce.Do(func() {
			why.Store(reason)
			go b.signal(name, "KILL", exited)
		})
	}
	// abandon makes the relay of a command's output stop waiting on a
	// reader that does not read, once the call is over (killed on
	// request, cancelled, or past its time limit and sandbox.OutputGrace): a
	// write blocked on a full pipe held the call for ever.
	abandon := make(chan struct{})
	var abandonOnce sync.Once
	abandonOutput := func() { abandonOnce.Do(func() { close(abandon) }) }
	if !hostDeadlineOff.Load() {
		timer := time.AfterFunc(l.wall, func() {
			kill("time")
			time.AfterFunc(sandbox.OutputGrace, abandonOutput)
		})
		defer timer.Stop()
	}
	stopCtx := context.AfterFunc(ctx, func() {
		kill("ctx")
		abandonOutput()
	})
	defer stopCtx()
	stopDisk := func() {}
	if !hostDiskGuardOff.Load() {
		stopDisk = guard.Watch(func() { kill("disk") })
	}
	defer stopDisk()
	done := make(chan struct{})
	defer close(done)
	if spec.Stop != nil {
		go func() {
			select {
			case <-spec.Stop:
				send(syscall.SIGTERM)
			case <-done:
			}
		}()
	}
	if spec.Signal != nil && len(spec.Command) > 0 {
		go func() {
			for {
				select {
				case s := <-spec.Signal:
					switch s {
					case syscall.SIGKILL:
						kill("signal")
						abandonOutput()
					case syscall.SIGINT, syscall.SIGHUP, syscall.SIGTERM:
						send(s)
					}
				case <-done:
					return
				}
			}
		}()
	}
	go func() {
		if spec.Stdin != nil {
			_, _ = io.Copy(stdin, spec.Stdin)
		}
		stdin.Close()
	}()
	var truncated atomic.Bool
	head := &headBuffer{max: 4096}
	var wg sync.WaitGroup
	relay := func(dst io.Writer, src io.Reader) {
		defer wg.Done()
		if len(spec.Command) > 0 {
			dst = sandbox.Abandonable(dst, abandon)
		}
		_, _, _ = sandbox.CopyCapped(dst, src, l.out, func() {
			truncated.Store(true)
			kill("output")
		})
	}
	wg.Add(2)
	go relay(spec.Stdout, stdout)
	go relay(io.MultiWriter(head, orDiscard(spec.Stderr)), stderr)
	wg.Wait()
	werr := cmd.Wait()
	stopDisk()
	close(exited)
	b.ran.Store(time.Since(start).Nanoseconds())
	reason, _ := why.Load().(string)
	code := 0
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		code = ee.ExitCode()
	}
	if reason != "" || werr != nil && (ee == nil || code >= 125) {
		// Killed, or podman failed or was killed itself: make sure no
		// container of this call survives it (on a normal exit, podman
		// run --rm has removed it already).
		_ = b.podmanCmd("rm", "--force", "--ignore", name).Run()
	}
	if reason == "ctx" {
		return nil, fmt.Errorf("sandbox cancelled: %w", ctx.Err())
	}
	if ee == nil && werr != nil {
		return nil, fmt.Errorf("waiting for podman: %w", werr)
	}
	res := &sandbox.Result{Setup: setup, Duration: time.Since(start), OutputTruncated: truncated.Load(),
		Isolation: wire.Isolation{Backend: "podman", Features: append([]string(nil), features...)}}
	// The init's report, once every holder of the pipe is gone (with the
	// container); a container killed before the init could write it
	// reports nothing, and conmon's record of an OOM kill still counts.
	var reportedHits []string
	select {
	case reportedHits = <-reported:
	case <-time.After(reportWait):
		b.log.Debug("no report from the container's init", "name", name)
	}
	// The init ends the container itself at its deadline or when its
	// disk guard fires, and says so: the limit this process, stopped by
	// job control, did not enforce in time.
	if reason == "" && slices.Contains(reportedHits, inside.ReportTime) {
		reason = "time"
	}
	if reason == "" && slices.Contains(reportedHits, inside.ReportDisk) {
		reason = "disk"
	}
	hit := sandbox.Hits{Time: reason == "time", Output: res.OutputTruncated, Disk: reason == "disk"}
	if reason == "time" || reason == "disk" {
		res.ExitCode, res.Signal = -1, int(syscall.SIGKILL)
	} else {
		switch {
		case podmanFailed(code, len(spec.Command) == 0, head.Bytes()):
			return nil, runError(code, head.Bytes())
		case code > 128 && code < 128+65:
			res.ExitCode, res.Signal = -1, code-128
		default:
			res.ExitCode = code
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "oom")); err == nil || slices.Contains(reportedHits, inside.ReportMemory) {
		hit.Memory = true
	}
	hit.Processes = slices.Contains(reportedHits, inside.ReportProcesses)
	hit.Apply(res)
	return res, nil
}

// hostDeadlineOff, set by tests, keeps run from timing the call, as for a
// broker stopped by job control, so that the init's deadline alone ends
// it.
var hostDeadlineOff atomic.Bool

// hostDiskGuardOff, set by tests, keeps run from watching the disk, as
// for a broker stopped by job control, so that the init's guard alone
// stops a call that fills its grant's file system.
var hostDiskGuardOff atomic.Bool

// reportWait bounds the wait for the init's report after podman run has
// exited: the pipe ends with the container, but a process that escaped
// it (a broken runtime) must not hold up the call.
const reportWait = 5 * time.Second

// signal sends sig (KILL: the one signal PID 1 cannot miss) to the
// container name, trying again while it does not exist or run yet (a
// deadline or a cancel during creation is delivered once it starts)
// until podman run has exited.
func (b *Backend) signal(name, sig string, exited <-chan struct{}) {
	for {
		if b.podmanCmd("kill", "--signal", sig, name).Run() == nil {
			return
		}
		select {
		case <-exited:
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (b *Backend) podmanCmd(args ...string) *exec.Cmd {
	return exec.Command(b.podman, append([]string{"--runtime", b.runtime}, args...)...)
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// headBuffer keeps the first max bytes written to it.
type headBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (h *headBuffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if room := h.max - h.buf.Len(); room > 0 {
		h.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (h *headBuffer) Bytes() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return bytes.Clone(h.buf.Bytes())
}
