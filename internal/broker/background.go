package broker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/tool"
	"github.com/airlockhq/airlock/wire"
)

// Background work: a shell call with run_in_background starts its command in
// a sandbox of its own (the call's grant, isolation and limits, except the
// wall time, which is the session's) and returns at once with a work id. The
// session owns the work: background_command reads its state, and closing the
// session kills it. The output goes, stdout and stderr interleaved, to a log
// file in the session's records (host side, never inside a grant) and to an
// in-memory ring holding the last TailBytes.

// Defaults for background work.
const (
	// DefaultBackgroundLogCap caps each background log file.
	DefaultBackgroundLogCap = 64 << 20
	// DefaultBackgroundWall is the wall-time limit of background work when
	// Options.BackgroundWall is zero.
	DefaultBackgroundWall = 24 * time.Hour
	// DefaultMaxBackground is how many background commands may run at once
	// in one session when Options.MaxBackground is zero.
	DefaultMaxBackground = 16
	// TailBytes is how much of the end of the output status shows.
	TailBytes = 16 << 10
	// StopGrace is how long stop waits after SIGTERM before SIGKILL.
	StopGrace = 2 * time.Second
	// KillWait is how long stop waits for the work to end after SIGKILL
	// before it answers with the work's state as it is.
	KillWait = 3 * time.Second
	// backgroundOutputFactor: a background command may write this many times
	// the grant's output limit to stdout (and, separately, stderr), as a
	// foreground shell command may, before the output limit ends it.
	backgroundOutputFactor = 8
	// maxEndedTails is how many ended works keep their tail in memory; an
	// older one's tail is dropped (its log file keeps the output), so a
	// session that starts work after work holds a bounded amount.
	maxEndedTails = 256
	// maxEndedWorks is how many ended works a session keeps: past it the
	// oldest is forgotten (background_command no longer knows its id,
	// Background no longer lists it) and its log file removed. Each is
	// small, but a session that starts work after work would otherwise
	// hold every work it ever started, in memory and on the records' disk.
	// The audit records keep every one.
	maxEndedWorks = 1024
	// backgroundLogsKeptFactor: by default a session keeps this many times
	// BackgroundLogCap of its ended works' logs on disk.
	backgroundLogsKeptFactor = 4
)

// States of background work.
const (
	WorkRunning = "running" // the sandbox is being built or the command runs
	WorkExited  = "exited"  // the command ended on its own (or a limit ended it)
	WorkStopped = "stopped" // stop, or the session closing, ended it
	WorkFailed  = "failed"  // the sandbox could not be built; nothing ran
	WorkLost    = "lost"    // the sandbox was lost with the command in it (remote hands rebuilt); the outcome is unknown
)

// WorkInfo describes one background command.
type WorkInfo struct {
	ID string
	// CallID is the shell call that started it.
	CallID string
	// Command is the command line, secrets redacted; Cwd where it runs.
	Command, Cwd string
	State        string
	// ExitCode is the command's exit status once it exited normally.
	ExitCode *int
	// Signal is the signal that ended it, or 0.
	Signal int
	// Limit names the limit that ended it (wire.LimitTime, LimitMemory,
	// LimitProcesses, LimitOutput), or "".
	Limit wire.Limit
	// LimitsHit names every limit it hit, Limit included.
	LimitsHit []wire.Limit
	// Started and Ended (zero while running).
	Started, Ended time.Time
	// Bytes is the size of the whole output so far.
	Bytes int64
	// LogPath is the log file; LogCap its cap; LogCapped reports that the
	// output passed it, so the log holds only the first LogCap bytes.
	LogPath   string
	LogCap    int64
	LogCapped bool
	// LogFull reports that the log stopped short of its cap, holding the
	// first LogFullAt bytes, because the records' file system reached its
	// floor of free space (see diskguard.Floor).
	LogFull   bool
	LogFullAt int64
	// LogRemoved reports that the log file was removed after the work
	// ended: a session keeps only its latest ended works' logs, up to
	// Options.BackgroundLogsKept bytes.
	LogRemoved bool
	// Detail explains a failure or a stop (for logs, not the model).
	Detail string
}

// work is one background command.
type work struct {
	id, callID, command, cwd, logPath string
	started                           time.Time
	out                               *workOutput
	stopCh                            chan struct{}
	stopOnce                          sync.Once
	cancel                            context.CancelFunc
	done                              chan struct{} // closed once the end is recorded

	mu       sync.Mutex
	stopping string // why a stop was asked ("" if none)
	info     WorkInfo
	res      *sandbox.Result
	fail     string // the model's sentence for a failed start
}

// background is a session's background work.
type background struct {
	mu    sync.Mutex
	works map[string]*work
	wg    sync.WaitGroup
	// ended are the ended works that still keep their tail, oldest first.
	ended []*work
	// kept are the ended works the session still knows (in works), oldest
	// first: at most maxEndedWorks.
	kept []*work
	// logs are the ended works whose log file is still on disk, oldest
	// first, and logBytes what those files hold.
	logs     []*work
	logBytes int64
}

// requestStop asks the sandbox to SIGTERM all of its processes.
func (w *work) requestStop(why string) {
	w.mu.Lock()
	if w.stopping == "" {
		w.stopping = why
	}
	w.mu.Unlock()
	w.stopOnce.Do(func() { close(w.stopCh) })
}

func (w *work) running() bool {
	select {
	case <-w.done:
		return false
	default:
		return true
	}
}

// snapshot is the work's state now.
func (w *work) snapshot() WorkInfo {
	w.mu.Lock()
	info := w.info
	w.mu.Unlock()
	info.setSize(w.out)
	return info
}

// setSize sets i's byte count and the state of its log from o.
func (i *WorkInfo) setSize(o *workOutput) {
	var at int64
	i.Bytes, i.LogCapped, at = o.size()
	i.LogFull, i.LogFullAt = at >= 0, max(at, 0)
	_, i.LogRemoved = o.logState()
}

// Background lists the session's background commands, oldest first: those
// running, and the latest ended ones it keeps (see maxEndedWorks).
func (s *Session) Background() []WorkInfo {
	s.bg.mu.Lock()
	works := make([]*work, 0, len(s.bg.works))
	for _, w := range s.bg.works {
		works = append(works, w)
	}
	s.bg.mu.Unlock()
	out := make([]WorkInfo, 0, len(works))
	for _, w := range works {
		out = append(out, w.snapshot())
	}
	slices.SortFunc(out, func(a, b WorkInfo) int { return a.Started.Compare(b.Started) })
	return out
}

// runBroker answers a call the broker handles itself: a shell call with
// run_in_background, or background_command. The grant has already allowed it.
func (s *Session) runBroker(ctx context.Context, c *call, args tool.Args, d grant.Decision, refuse func(grant.Decision, string) *Result) *Result {
	var out wire.ToolOutput
	var iso *wire.Isolation
	var unenforced []wire.Limit
	own, class := false, ClassOK
	switch a := args.(type) {
	case tool.ShellArgs:
		var why string
		out, class, why = s.startBackground(c, a)
		if why != "" {
			return refuse(grant.Decision{Rule: "background"}, why)
		}
		own = true
		// The work's sandbox has not run yet: name the limits it will run
		// without, as its status answers will.
		if rep := s.opts.Backend.Report(); s.opts.Grant.AllowsUnenforcedLimits() || rep.Unsandboxed {
			unenforced = rep.Unenforced()
		}
	case tool.BackgroundCommandArgs:
		s.bg.mu.Lock()
		w := s.bg.works[a.WorkID]
		s.bg.mu.Unlock()
		if w == nil {
			return refuse(grant.Decision{Rule: "arguments"}, fmt.Sprintf("%s: field %q: no background work %q is known to this session: none was started in it with that id, or it ended long ago (a session keeps only its latest %d ended works; the audit log records every one)", c.tool, "work_id", a.WorkID, maxEndedWorks))
		}
		out, iso = s.backgroundCommand(ctx, w, a, c.limits)
		if iso != nil {
			unenforced = iso.Unenforced
		}
	default:
		return refuse(grant.Decision{Rule: "tools"}, fmt.Sprintf("tool %q is not answered by the broker", c.tool))
	}
	c.out = Outcome{Output: out, Class: class, Detail: out.Meta.WorkID}
	return &Result{CallID: c.id, Class: class, Decision: d, Output: s.labelWith(c.tool, out, iso, own, unenforced)}
}

// startBackground starts a shell command as background work and returns the
// call's output and class. A non-empty refusal means nothing was started.
func (s *Session) startBackground(c *call, a tool.ShellArgs) (out wire.ToolOutput, class wire.Class, refusal string) {
	cwd := a.Cwd
	if cwd == "" {
		cwd = "."
	}
	if !filepath.IsAbs(cwd) {
		cwd = filepath.Join(s.opts.Grant.WorkDir(), cwd)
	}
	cwd = filepath.Clean(cwd)
	// The grant allowed cwd; say plainly when it is no directory rather than
	// letting the sandbox fail to enter it.
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		return tool.Failure("field %q: %s is not a directory", "cwd", cwd), ClassOK, ""
	}
	if !s.opts.Grant.ToolEnabled("background_command") {
		return wire.ToolOutput{}, "", fmt.Sprintf("field %q: background work needs the background_command tool to check or stop it, and the grant does not enable it", "run_in_background")
	}
	logDir := filepath.Join(s.dir, "background")
	if m := grantedContaining(s.opts.Grant, logDir); m != "" {
		return wire.ToolOutput{}, "", fmt.Sprintf("background logs would be written to %s, inside the granted path %s; move the records directory outside every grant", logDir, m)
	}

	s.bg.mu.Lock()
	defer s.bg.mu.Unlock()
	if why := s.adm.startBackground(&s.bgHeld); why != "" {
		return wire.ToolOutput{}, "", fmt.Sprintf("field %q: %s", "run_in_background", why)
	}
	// The work's place in the budget is given back when it ends, or now
	// if it never starts.
	started := false
	defer func() {
		if !started {
			s.adm.endBackground(&s.bgHeld)
		}
	}()

	id := "wrk_" + randomHex(8)
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		s.logger.Error("creating the background log directory", "err", err)
		return failure(SentenceCannotRun), ClassSandbox, ""
	}
	logPath := filepath.Join(logDir, id+".log")
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		s.logger.Error("creating a background log", "work", id, "err", err)
		return failure(SentenceCannotRun), ClassSandbox, ""
	}
	w := &work{
		// The command is kept for as long as the session (Background lists
		// it): abridged as its record's is, so that what the session holds
		// of each work is bounded, whatever the command's size.
		id: id, callID: c.id, command: audit.AbridgeText(s.secrets.redact().String(a.Command), audit.MaxArgString), cwd: cwd, logPath: logPath,
		started: time.Now(),
		out:     newWorkOutput(f, s.opts.BackgroundLogCap),
		stopCh:  make(chan struct{}),
		done:    make(chan struct{}),
	}
	w.info = WorkInfo{ID: id, CallID: c.id, Command: w.command, Cwd: cwd, State: WorkRunning,
		Started: w.started, LogPath: logPath, LogCap: s.opts.BackgroundLogCap}

	spec := SpecFor(s.opts.Grant, c.limits)
	spec.Command = []string{"/bin/sh", "-c", a.Command}
	spec.Cwd = cwd
	spec.Limits.Wall = s.opts.BackgroundWall
	if c.limits.Output > 0 {
		spec.Limits.OutputBytes = backgroundOutputFactor * c.limits.Output
	}
	spec.Stdout, spec.Stderr = w.out, w.out
	spec.Stop = w.stopCh

	rec := audit.Record{
		Kind: audit.KindBackgroundStart, Session: s.id, CallID: c.id, Tool: c.tool, WorkID: id,
		Decision: "allowed",
		Class:    WorkRunning,
		Backend:  s.opts.Backend.Report().Backend,
		Detail:   "in " + cwd + ": " + audit.AbridgeText(w.command, audit.MaxArgString),
		Limits: &audit.Limits{TimeMS: spec.Limits.Wall.Milliseconds(), MemoryBytes: c.limits.Memory,
			Processes: c.limits.Processes, OutputBytes: spec.Limits.OutputBytes, FileBytes: c.limits.FileSize},
	}
	rec.SetArgs(redactJSON(s.secrets.redact(), c.args))
	// In flight first, then the start record: a work whose mark cannot be
	// written never starts, and must have no record saying it runs.
	inflight := audit.InFlight{Kind: audit.KindBackgroundStart, WorkID: id, CallID: c.id, Tool: c.tool}
	if err := s.live.Begin(inflight); err != nil {
		f.Close()
		os.Remove(logPath) // a work that never started leaves no file
		s.logger.Error("cannot record background work in flight; not started", "work", id, "err", err)
		return failure(SentenceCannotRun), ClassSandbox, ""
	}
	if err := s.log.Write(rec); err != nil {
		// The call's own record fails the same way and the caller sees ErrAudit.
		s.live.End(inflight)
		f.Close()
		os.Remove(logPath) // a work that never started leaves no file
		s.logger.Error("audit record lost; background work not started", "work", id, "err", err)
		return failure(SentenceCannotRun), ClassSandbox, ""
	}
	// The network is the grant's, as for a foreground command: an egress
	// proxy of its own for the work's lifetime.
	stopEgress := func() {}
	if s.opts.Grant.HasNetwork() {
		var o EgressOptions
		if s.opts.Egress != nil {
			o = *s.opts.Egress
		}
		o.Sandbox = id
		rec := s.egressRecorder(c)
		o.OnDecision, o.OnStop = rec.decide, rec.flush
		o.Hold = s.log.Healthy // no connection the records could not hold
		if o.Logger == nil {
			o.Logger = s.logger
		}
		stop, err := AttachEgress(s.ctx, s.opts.Grant, spec, &o)
		if err != nil {
			s.logger.Error("starting the egress proxy of background work", "work", id, "err", err)
			s.finish(w, nil, err) // its end record, after the start's
			os.Remove(logPath)    // the session never lists it: nothing reads its log
			close(w.done)
			return failure(SentenceCannotRun), ClassSandbox, ""
		}
		stopEgress = stop
	}

	ctx, cancel := context.WithCancel(s.ctx) // Close kills it
	w.cancel = cancel
	s.bg.works[id] = w
	s.bg.wg.Add(1)
	started = true
	go func() {
		defer s.bg.wg.Done()
		defer cancel()
		res, err := s.opts.Backend.Run(ctx, spec)
		stopEgress()
		s.finish(w, res, err)
		s.adm.endBackground(&s.bgHeld) // free once the work is seen to have ended
		// Retired before a wait answers, so that what the session keeps
		// is within its bounds whenever the model reads that work ended.
		s.retire(w)
		close(w.done)
	}()
	s.logger.Info("background work started", "work", id, "call", c.id)
	return wire.ToolOutput{
		Content: fmt.Sprintf("started background work %s; check, wait for or stop it with background_command (full log: %s)", id, logPath),
		Meta:    wire.Meta{WorkID: id},
	}, ClassOK, ""
}

// retire counts the ended work w among those that keep their tail in
// memory and their log on disk, dropping the tail of the oldest past
// maxEndedTails and removing the logs of the oldest while the logs kept
// hold more than Options.BackgroundLogsKept: each log is capped, but a
// session that starts work after work would otherwise fill the records'
// disk, and with it every session's audit records.
func (s *Session) retire(w *work) {
	s.bg.mu.Lock()
	defer s.bg.mu.Unlock()
	s.bg.ended = append(s.bg.ended, w)
	if n := len(s.bg.ended) - maxEndedTails; n > 0 {
		for _, old := range s.bg.ended[:n] {
			old.out.dropTail()
		}
		s.bg.ended = append(s.bg.ended[:0], s.bg.ended[n:]...)
	}
	logged, _ := w.out.logState()
	s.bg.logs = append(s.bg.logs, w)
	s.bg.logBytes += logged
	n := 0
	for ; n < len(s.bg.logs) && s.bg.logBytes > s.opts.BackgroundLogsKept; n++ {
		old := s.bg.logs[n]
		freed, err := old.out.removeLog(old.logPath)
		if err != nil {
			// Counted as gone all the same: one file that cannot be
			// removed must not make the session remove every other.
			s.logger.Warn("removing an ended background work's log", "work", old.id, "err", err)
			freed, _ = old.out.logState()
		} else {
			s.logger.Info("removed an ended background work's log: the session keeps only its latest", "work", old.id, "bytes", freed)
		}
		s.bg.logBytes -= freed
	}
	s.bg.logs = append(s.bg.logs[:0], s.bg.logs[n:]...)
	s.bg.kept = append(s.bg.kept, w)
	n = len(s.bg.kept) - maxEndedWorks
	for _, old := range s.bg.kept[:max(n, 0)] {
		s.forget(old)
	}
	if n > 0 {
		s.bg.kept = append(s.bg.kept[:0], s.bg.kept[n:]...)
	}
}

// forget drops the ended work w, the oldest the session keeps: its id is
// no longer known and its log file is removed. s.bg.mu is held.
func (s *Session) forget(w *work) {
	delete(s.bg.works, w.id)
	// Works end into logs and kept in the same order, and w is the oldest
	// kept: if its log is still on disk, it is the oldest there.
	if len(s.bg.logs) > 0 && s.bg.logs[0] == w {
		freed, err := w.out.removeLog(w.logPath)
		if err != nil {
			s.logger.Warn("removing a forgotten background work's log", "work", w.id, "err", err)
			freed, _ = w.out.logState()
		}
		s.bg.logBytes -= freed
		s.bg.logs = append(s.bg.logs[:0], s.bg.logs[1:]...)
	}
	s.logger.Info("forgot an ended background work: the session keeps only its latest", "work", w.id)
}

// grantedContaining returns the granted path that contains p, or "".
func grantedContaining(g *grant.Grant, p string) string {
	if r, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		p = filepath.Join(r, filepath.Base(p))
	}
	for _, m := range g.Mounts() {
		if p == m.Source || strings.HasPrefix(p, strings.TrimSuffix(m.Source, "/")+"/") {
			return m.Source
		}
	}
	return ""
}

// finish records how the work ended.
func (s *Session) finish(w *work, res *sandbox.Result, err error) {
	w.out.close()
	w.mu.Lock()
	info := &w.info
	info.Ended = time.Now()
	w.res = res
	switch {
	case w.stopping != "" || s.ctx.Err() != nil:
		info.State = WorkStopped
		info.Detail = w.stopping
		if info.Detail == "" {
			info.Detail = "the session closed"
		}
		if res == nil {
			// Killed at the end of the grace (or by the session closing).
			info.Signal = 9
		}
	case errors.Is(err, sandbox.ErrLost):
		info.State = WorkLost
		info.Detail = s.secrets.redact().String(errString(err))
		w.fail = fmt.Sprintf("background work %s was lost with the sandbox running it; its outcome is unknown", w.id)
	case res == nil:
		info.State = WorkFailed
		info.Detail = s.secrets.redact().String(errString(err))
		w.fail = SentenceCannotRun
		var mf *sandbox.MissingFeatureError
		if errors.As(err, &mf) {
			w.fail = SentenceCannotRun + ": " + mf.Error()
		}
	default:
		info.State = WorkExited
	}
	if res != nil {
		info.Limit = res.Limit
		info.LimitsHit = res.LimitsHit
		info.Signal = res.Signal
		if res.Signal == 0 {
			code := res.ExitCode
			info.ExitCode = &code
		}
	}
	final := *info
	w.mu.Unlock()
	final.setSize(w.out)

	rec := audit.Record{
		Kind: audit.KindBackgroundEnd, Session: s.id, CallID: w.callID, Tool: "shell", WorkID: w.id,
		Class:    wire.Class(final.State), // a background record's class is the work's state
		Exit:     final.ExitCode,
		Signal:   final.Signal,
		Detail:   endDetail(final),
		Duration: ms(final.Ended.Sub(final.Started)),
		BytesOut: int(min(final.Bytes, int64(^uint(0)>>1))),
	}
	rec.Truncated = final.LogCapped || final.LogFull
	if res != nil {
		rec.Backend, rec.Isolation = res.Isolation.Backend, res.Isolation.Features
		rec.SetupMS = ms(res.Setup)
		rec.LimitsHit, rec.Unenforced = res.LimitsHit, res.Isolation.Unenforced
		rec.Remote = res.Remote
	}
	if err := s.log.Write(rec); err != nil {
		s.logger.Error("audit record of a background end lost", "work", w.id, "err", err)
	} else {
		s.live.End(audit.InFlight{WorkID: w.id})
	}
	s.logger.Info("background work ended", "work", w.id, "state", final.State, "limit", final.Limit)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// endDetail summarises an end for the audit log.
func endDetail(i WorkInfo) string {
	var b strings.Builder
	b.WriteString(describeEnd(i))
	fmt.Fprintf(&b, " after %.1fs; %d bytes of output", i.Ended.Sub(i.Started).Seconds(), i.Bytes)
	if i.LogCapped {
		fmt.Fprintf(&b, "; log capped at %d bytes", i.LogCap)
	}
	if i.LogFull {
		fmt.Fprintf(&b, "; log stopped at %d bytes: the records' disk is nearly full", i.LogFullAt)
	}
	if i.Detail != "" {
		b.WriteString("; " + i.Detail)
	}
	return b.String()
}

// describeEnd is "exit 0", "killed by signal 9", with the limit that ended it.
func describeEnd(i WorkInfo) string {
	var s string
	switch {
	case i.ExitCode != nil:
		s = fmt.Sprintf("exit %d", *i.ExitCode)
	case i.Signal != 0:
		s = fmt.Sprintf("killed by signal %d", i.Signal)
	default:
		s = "no exit status"
	}
	var also []string
	for _, l := range i.LimitsHit {
		if l != i.Limit {
			also = append(also, hitSentence(l))
		}
	}
	switch {
	case i.Limit != "" && len(also) > 0:
		s += ": " + limitSentence(i.Limit) + "; " + strings.Join(also, "; ")
	case i.Limit != "":
		s += ": " + limitSentence(i.Limit)
	case len(also) > 0:
		s += "; " + strings.Join(also, "; ")
	}
	return s
}

// hitSentence says that work hit a limit that did not end it.
func hitSentence(limit wire.Limit) string {
	switch limit {
	case wire.LimitMemory:
		return "it hit its memory limit (a process was killed)"
	case wire.LimitProcesses:
		return "it hit its process limit (a fork was refused)"
	}
	return "it hit its " + string(limit) + " limit"
}

func limitSentence(limit wire.Limit) string {
	switch limit {
	case wire.LimitTime:
		return "the background wall-time limit ended it"
	case wire.LimitMemory:
		return "it ran out of memory"
	case wire.LimitProcesses:
		return "it hit its process limit"
	case wire.LimitOutput:
		return "its output passed the size limit"
	case wire.LimitDisk:
		return "the disk it writes to was nearly full"
	}
	return "the " + string(limit) + " limit ended it"
}

// backgroundCommand answers status, wait and stop within the call's limits:
// a wait ends at its time limit, and the answer costs at most its output
// limit in JSON.
func (s *Session) backgroundCommand(ctx context.Context, w *work, a tool.BackgroundCommandArgs, limits grant.Limits) (wire.ToolOutput, *wire.Isolation) {
	limit := limits.Output
	var waited time.Duration
	note := ""
	switch a.Operation {
	case tool.OpWait:
		secs := tool.MaxWaitSeconds
		if a.WaitSecs != nil {
			secs = *a.WaitSecs
		}
		if secs == 0 {
			break // wait_secs 0: answer at once, as status does
		}
		d := time.Duration(secs) * time.Second
		capped := limits.Time > 0 && limits.Time < d
		if capped {
			// A wait is a call: it answers within the grant's time limit.
			d = limits.Time
		}
		t0 := time.Now()
		t := time.NewTimer(d)
		select {
		case <-w.done:
		case <-t.C:
			if capped {
				note = fmt.Sprintf("the wait ended at the call's time limit (%s); wait again for longer", limits.Time)
			}
		case <-ctx.Done():
			note = "the wait was cancelled"
		}
		t.Stop()
		waited = time.Since(t0)
	case tool.OpStop:
		if !w.running() {
			note = "it had already ended; nothing was stopped"
			break
		}
		if !s.stopWork(ctx, w, "stopped by background_command") {
			note = fmt.Sprintf("its processes had not all ended %v after SIGKILL; it is still being torn down (ask for its status again)", KillWait)
		}
	}
	info := w.snapshot()
	w.mu.Lock()
	res, fail := w.res, w.fail
	w.mu.Unlock()
	var iso *wire.Isolation
	if res != nil {
		iso = &res.Isolation
	}
	isWait := a.Operation == tool.OpWait
	tail := w.out.tail()
	if limit > 0 {
		// The tail is the work's output, read by the model like a
		// foreground call's: it gets what the output limit leaves beside
		// the status, counted as the model's answer carries it.
		fixed := renderStatus(info, fail, isWait, waited, note, tailOutput{}).Content
		room := limit - int64(textCost(fixed)) - int64(len(tailMarker)) - 20 // the count of bytes shown
		tail = tail.fit(max(room, 0))
	}
	return renderStatus(info, fail, isWait, waited, note, tail), iso
}

// stopWork sends SIGTERM to every process of the work's sandbox, SIGKILL
// after StopGrace (at once if ctx ends), and returns once they are gone,
// true; or false when they are not gone KillWait after the SIGKILL (a
// process stuck in the kernel, a backend slow to tear down): the caller
// answers with the state the work is in rather than wait without end.
func (s *Session) stopWork(ctx context.Context, w *work, why string) bool {
	w.requestStop(why)
	t := time.NewTimer(StopGrace)
	defer t.Stop()
	select {
	case <-w.done:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	w.cancel()
	k := time.NewTimer(KillWait)
	defer k.Stop()
	select {
	case <-w.done:
		return true
	case <-k.C:
		return false
	}
}

// tailMarker starts the tail in a status.
const tailMarker = "--- last output ---\n"

// renderStatus is what the model reads about one work.
func renderStatus(i WorkInfo, fail string, isWait bool, waited time.Duration, note string, tail tailOutput) wire.ToolOutput {
	var b strings.Builder
	out := wire.ToolOutput{Meta: wire.Meta{WorkID: i.ID, WorkState: string(i.State), Limit: i.Limit, LimitsHit: i.LimitsHit, Signal: i.Signal, ExitCode: i.ExitCode, Bytes: i.Bytes}}
	switch i.State {
	case WorkRunning:
		fmt.Fprintf(&b, "work %s: running for %.1fs\n", i.ID, time.Since(i.Started).Seconds())
	case WorkFailed:
		fmt.Fprintf(&b, "work %s: failed: %s\n", i.ID, fail)
		out.IsError = true
	case WorkLost:
		fmt.Fprintf(&b, "work %s: lost: %s\n", i.ID, fail)
		out.IsError = true
	default:
		fmt.Fprintf(&b, "work %s: %s (%s) after %.1fs\n", i.ID, i.State, describeEnd(i), i.Ended.Sub(i.Started).Seconds())
	}
	if isWait {
		fmt.Fprintf(&b, "waited %.1fs\n", waited.Seconds())
	}
	if note != "" {
		b.WriteString(note + "\n")
	}
	log := "full log: " + i.LogPath
	if i.LogRemoved {
		log = "its log was removed: the session keeps only the logs of its latest ended works"
	}
	if tail.all {
		fmt.Fprintf(&b, "output: %d bytes, all shown (%s)\n", i.Bytes, log)
	} else {
		fmt.Fprintf(&b, "output: %d bytes, last %d shown (%s)\n", i.Bytes, len(tail.data), log)
		out.Truncated = true
		out.Meta.OmittedBytes = i.Bytes - int64(len(tail.data))
	}
	switch {
	case i.LogRemoved:
	case i.LogFull:
		fmt.Fprintf(&b, "log stopped at %d bytes, the disk it is on being nearly full: the log file holds only the first %d bytes of the output\n", i.LogFullAt, i.LogFullAt)
	case i.LogCapped:
		fmt.Fprintf(&b, "log capped at %d bytes: the log file holds only the first %d bytes of the output\n", i.LogCap, i.LogCap)
	}
	if len(tail.data) > 0 {
		b.WriteString(tailMarker)
		b.WriteString(wire.ValidUTF8(string(tail.data)))
	}
	out.Content = b.String()
	return out
}

// stopAll waits until every background command of the session has ended
// and recorded its end; Close has cancelled their contexts, which kills them.
func (s *Session) stopAll() { s.bg.wg.Wait() }
