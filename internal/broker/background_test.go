package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandboxtest"
	"github.com/airlockhq/airlock/wire"
)

// backends are the backends background work must behave the same on.
func backends(t *testing.T) map[string]func(*testing.T) sandbox.Backend {
	return map[string]func(*testing.T) sandbox.Backend{
		"linux":       func(t *testing.T) sandbox.Backend { return sandboxtest.Native(t) },
		"unsandboxed": func(t *testing.T) sandbox.Backend { return sandboxtest.Unsandboxed(t) },
	}
}

// startWork starts command in the background and returns its work id.
func startWork(t *testing.T, s *broker.Session, command string) string {
	t.Helper()
	res := call(t, s, "shell", fmt.Sprintf(`{"command":%q,"run_in_background":true}`, command))
	id := res.Output.Meta.WorkID
	if res.Class != broker.ClassOK || res.Output.IsError || !strings.HasPrefix(id, "wrk_") || len(id) != 20 {
		t.Fatalf("starting %q: class %s, output %+v", command, res.Class, res.Output)
	}
	if !strings.Contains(res.Output.Content, "started background work "+id) {
		t.Errorf("start output = %q", res.Output.Content)
	}
	return id
}

// workCall runs background_command.
func workCall(t *testing.T, s *broker.Session, op, id, extra string) *broker.Result {
	t.Helper()
	return call(t, s, "background_command", fmt.Sprintf(`{"operation":%q,"work_id":%q%s}`, op, id, extra))
}

func workInfo(t *testing.T, s *broker.Session, id string) broker.WorkInfo {
	t.Helper()
	for _, w := range s.Background() {
		if w.ID == id {
			return w
		}
	}
	t.Fatalf("work %s is not listed by Background()", id)
	return broker.WorkInfo{}
}

// waitForLog waits until the work's log holds want.
func waitForLog(t *testing.T, s *broker.Session, id, want string) {
	t.Helper()
	path := workInfo(t, s, id).LogPath
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("log %s never showed %q; it holds %q", path, want, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lastOutput is what follows the "--- last output ---" line.
func lastOutput(content string) string {
	_, after, _ := strings.Cut(content, "--- last output ---\n")
	return after
}

func uniqueMarker(name string) string {
	return fmt.Sprintf("airlock-bg-%s-%d", name, time.Now().UnixNano())
}

func TestBackgroundStartStatusWait(t *testing.T) {
	const command = "echo hello; until [ -e go1 ]; do sleep 0.01; done; echo oops >&2; until [ -e go2 ]; do sleep 0.01; done; echo bye; exit 3"
	for name, backend := range backends(t) {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, grant.Limits{})
			s := f.open(t, backend(t), nil)
			// The work goes on when the test says (a file in the
			// workspace), so that the status finds it running and each
			// line is in the log before the next is written (stdout and
			// stderr are read apart): sleeps of 0.2 and 0.3 s instead
			// timed both, and a status later than half a second found
			// the work ended.
			id := startWork(t, s, command)
			goOn := func(step string) {
				t.Helper()
				if err := os.WriteFile(filepath.Join(f.ws, step), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}

			st := workCall(t, s, "status", id, "")
			if st.Class != broker.ClassOK || st.Output.Meta.WorkID != id {
				t.Fatalf("status: %+v", st)
			}
			if !strings.Contains(st.Output.Content, "work "+id+": running for ") {
				t.Errorf("status right after the start = %q, want running", st.Output.Content)
			}
			waitForLog(t, s, id, "hello\n")
			goOn("go1")
			waitForLog(t, s, id, "hello\noops\n")
			goOn("go2")

			res := workCall(t, s, "wait", id, "")
			out := res.Output
			if res.Class != broker.ClassOK || out.IsError {
				t.Fatalf("wait: %+v", res)
			}
			info := workInfo(t, s, id)
			for _, want := range []string{
				"work " + id + ": exited (exit 3) after ",
				"\nwaited ",
				fmt.Sprintf("output: 15 bytes, all shown (full log: %s)\n", info.LogPath),
				"--- last output ---\nhello\noops\nbye\n",
			} {
				if !strings.Contains(out.Content, want) {
					t.Errorf("wait output lacks %q:\n%s", want, out.Content)
				}
			}
			if !strings.HasPrefix(out.Content, "[airlock: background_command · ") {
				t.Errorf("wait output is not labelled: %q", out.Content)
			}
			if out.Meta.ExitCode == nil || *out.Meta.ExitCode != 3 || out.Meta.Bytes != 15 || out.Truncated {
				t.Errorf("wait meta = %+v (truncated %v)", out.Meta, out.Truncated)
			}
			log, err := os.ReadFile(info.LogPath)
			if err != nil || string(log) != "hello\noops\nbye\n" {
				t.Errorf("log = %q, %v", log, err)
			}
			if fi, err := os.Stat(info.LogPath); err != nil || fi.Mode().Perm() != 0o600 || !strings.HasPrefix(info.LogPath, s.Dir()+"/background/") {
				t.Errorf("log file %s: %v, %v; want 0600 in the session's records", info.LogPath, fi.Mode(), err)
			}
			if info.State != broker.WorkExited || info.Ended.IsZero() || info.Command != command || info.Cwd != f.ws {
				t.Errorf("Background() = %+v", info)
			}

			// Every start and end is audited.
			var starts, ends []audit.Record
			for _, r := range records(t, f.records) {
				switch r.Kind {
				case audit.KindBackgroundStart:
					starts = append(starts, r)
				case audit.KindBackgroundEnd:
					ends = append(ends, r)
				}
			}
			if len(starts) != 1 || starts[0].WorkID != id || !strings.Contains(starts[0].Detail, "echo hello") || !strings.Contains(starts[0].Detail, f.ws) {
				t.Errorf("start records = %+v", starts)
			}
			if len(ends) != 1 || ends[0].WorkID != id || ends[0].Class != broker.WorkExited || ends[0].Exit == nil || *ends[0].Exit != 3 || ends[0].BytesOut != 15 {
				t.Errorf("end records = %+v", ends)
			}
		})
	}
}

func TestBackgroundWaitTimesOut(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	s := f.open(t, sandboxtest.Native(t), nil)
	id := startWork(t, s, "sleep 30")
	t0 := time.Now()
	res := workCall(t, s, "wait", id, `,"wait_secs":1`)
	took := time.Since(t0)
	// It waited (at least the second asked for) and returned while the
	// 30 s command still runs (a loose bound: a loaded machine is slow).
	if took < time.Second || took > 25*time.Second {
		t.Errorf("wait_secs 1 took %v", took)
	}
	if !strings.Contains(res.Output.Content, ": running for ") {
		t.Errorf("wait output = %q, want still running", res.Output.Content)
	}
	// The wait reported is at least the second asked for and no more than
	// the call took (a timer run late on a loaded machine waits longer).
	m := regexp.MustCompile(`\nwaited ([0-9.]+)s\n`).FindStringSubmatch(res.Output.Content)
	if m == nil {
		t.Fatalf("wait output = %q, want how long it waited", res.Output.Content)
	}
	if w, err := strconv.ParseFloat(m[1], 64); err != nil || w < 1 || w > took.Seconds()+0.05 {
		t.Errorf("wait output says waited %ss for wait_secs 1 in a call of %v, want 1 s to the call's time", m[1], took)
	}
	if res.Output.Meta.ExitCode != nil {
		t.Errorf("exit code of running work = %d", *res.Output.Meta.ExitCode)
	}
}

func TestBackgroundStopTrappedSIGTERM(t *testing.T) {
	for name, backend := range backends(t) {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, grant.Limits{})
			s := f.open(t, backend(t), nil)
			marker := uniqueMarker("trap")
			id := startWork(t, s, "trap 'echo got TERM' TERM; echo ready; while :; do sleep 0.1; done # "+marker)
			waitForLog(t, s, id, "ready")
			t0 := time.Now()
			res := workCall(t, s, "stop", id, "")
			took := time.Since(t0)
			// The grace was given in full; then SIGKILL ended the loop
			// (checked by the signal below), not a hang.
			if took < broker.StopGrace {
				t.Errorf("stop of a process that ignores SIGTERM took %v, want the %v grace and then SIGKILL", took, broker.StopGrace)
			}
			if !strings.Contains(res.Output.Content, "work "+id+": stopped (killed by signal 9) after ") {
				t.Errorf("stop output = %q", res.Output.Content)
			}
			if !strings.Contains(lastOutput(res.Output.Content), "got TERM") {
				t.Errorf("the command never saw SIGTERM: %q", res.Output.Content)
			}
			if pids := processesMatching(t, marker); len(pids) > 0 {
				t.Errorf("processes left after stop: %v", pids)
			}
			if info := workInfo(t, s, id); info.State != broker.WorkStopped || info.Signal != 9 {
				t.Errorf("after stop: %+v", info)
			}
			// A second stop changes nothing.
			again := workCall(t, s, "stop", id, "")
			if !strings.Contains(again.Output.Content, "it had already ended; nothing was stopped") {
				t.Errorf("second stop = %q", again.Output.Content)
			}
		})
	}
}

// TestBackgroundStopDoubleForkedTree: a daemon that left the command's
// process group and session still hears the stop and may shut down cleanly.
func TestBackgroundStopDoubleForkedTree(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	s := f.open(t, sandboxtest.Native(t), nil)
	marker := uniqueMarker("daemon")
	daemon := `trap "echo daemon got TERM; exit 0" TERM; echo daemon ready; while :; do sleep 0.1; done # ` + marker
	id := startWork(t, s, fmt.Sprintf("(setsid sh -c %q &); sleep 1000 # %s", daemon, marker))
	waitForLog(t, s, id, "daemon ready")
	if len(processesMatching(t, marker)) < 2 {
		t.Fatalf("the daemon is not running: %v", processesMatching(t, marker))
	}
	// Every process ended on SIGTERM: the status below names signal 15,
	// not the SIGKILL that follows the grace.
	res := workCall(t, s, "stop", id, "")
	if !strings.Contains(lastOutput(res.Output.Content), "daemon got TERM") {
		t.Errorf("the double-forked daemon never saw SIGTERM: %q", res.Output.Content)
	}
	if !strings.Contains(res.Output.Content, ": stopped (killed by signal 15) after ") {
		t.Errorf("stop output = %q", res.Output.Content)
	}
	if pids := processesMatching(t, marker); len(pids) > 0 {
		t.Errorf("processes left after stop: %v", pids)
	}
}

func TestBackgroundTailStartsOnACharacter(t *testing.T) {
	for name, backend := range backends(t) {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, grant.Limits{})
			s := f.open(t, backend(t), nil)
			// 10000 two-byte characters and one byte: the last 16384 bytes
			// start in the middle of a character.
			id := startWork(t, s, `printf 'é%.0s' $(seq 10000); printf x`)
			res := workCall(t, s, "wait", id, "")
			tail := lastOutput(res.Output.Content)
			if !utf8.ValidString(tail) || !strings.HasPrefix(tail, "é") || !strings.HasSuffix(tail, "éx") {
				t.Fatalf("tail is not whole characters: %q...", tail[:min(len(tail), 8)])
			}
			if len(tail) != broker.TailBytes-1 {
				t.Errorf("tail has %d bytes, want %d", len(tail), broker.TailBytes-1)
			}
			out := res.Output
			if !out.Truncated || out.Meta.Bytes != 20001 || out.Meta.OmittedBytes != 20001-int64(len(tail)) {
				t.Errorf("meta = %+v, truncated %v", out.Meta, out.Truncated)
			}
			if !strings.Contains(out.Content, fmt.Sprintf("output: 20001 bytes, last %d shown (full log: ", len(tail))) {
				t.Errorf("output = %q", out.Content[:min(len(out.Content), 300)])
			}
		})
	}
}

// TestBackgroundOutputMarksBytesThatAreNotUTF8: the tail shows bytes that
// are not UTF-8 as \xNN, as a call's output does, instead of losing them to
// U+FFFD when the result is encoded.
func TestBackgroundOutputMarksBytesThatAreNotUTF8(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	s := f.open(t, sandboxtest.Unsandboxed(t), nil)
	id := startWork(t, s, `printf 'a\377\376b\n'`)
	res := workCall(t, s, "wait", id, "")
	if got := lastOutput(res.Output.Content); got != `a\xff\xfeb`+"\n" {
		t.Fatalf("tail = %q, want %q", got, `a\xff\xfeb`+"\n")
	}
}

func TestBackgroundFloodIsStoppedByTheOutputLimit(t *testing.T) {
	f := newFixture(t, grant.Limits{Output: 4 << 10})
	s := f.open(t, sandboxtest.Native(t), nil)
	id := startWork(t, s, "yes flood")
	res := workCall(t, s, "wait", id, `,"wait_secs":30`)
	out := res.Output
	if out.Meta.Limit != "output" || !strings.Contains(out.Content, "its output passed the size limit") || !strings.Contains(out.Content, ": exited (") {
		t.Fatalf("flood: meta %+v, content %q", out.Meta, out.Content[:min(len(out.Content), 300)])
	}
	// The sandbox copies 8 times the output limit, then stops.
	if out.Meta.Bytes != 8*(4<<10) {
		t.Errorf("flood wrote %d bytes, want %d", out.Meta.Bytes, 8*(4<<10))
	}
	if info := workInfo(t, s, id); info.Limit != "output" {
		t.Errorf("Background() = %+v", info)
	}
}

func TestBackgroundLogCap(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	s := f.open(t, sandboxtest.Native(t), func(o *broker.Options) { o.BackgroundLogCap = 10000 })
	id := startWork(t, s, `head -c 50000 /dev/zero | tr '\0' a`)
	res := workCall(t, s, "wait", id, "")
	out := res.Output
	if !strings.Contains(out.Content, ": exited (exit 0)") || out.Meta.Bytes != 50000 {
		t.Fatalf("wait: %+v", out.Meta)
	}
	if !strings.Contains(out.Content, "log capped at 10000 bytes") {
		t.Errorf("the cap is not noted: %q", out.Content[:min(len(out.Content), 400)])
	}
	if tail := lastOutput(out.Content); tail != strings.Repeat("a", broker.TailBytes) {
		t.Errorf("tail has %d bytes", len(tail))
	}
	info := workInfo(t, s, id)
	fi, err := os.Stat(info.LogPath)
	if err != nil || fi.Size() != 10000 || !info.LogCapped || info.LogCap != 10000 {
		t.Errorf("log: %v, %v; info %+v", fi, err, info)
	}
}

// TestCloseKillsAllBackgroundWork: closing the session leaves no process of
// its background work on the host, and each end is audited.
func TestCloseKillsAllBackgroundWork(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	s := f.open(t, sandboxtest.Native(t), nil)
	marker := uniqueMarker("close")
	daemon := `trap "" TERM; echo daemon ready; while :; do sleep 0.1; done # ` + marker
	ids := []string{
		startWork(t, s, "sleep 1000 # "+marker),
		startWork(t, s, "trap '' TERM; echo ready; while :; do sleep 0.1; done # "+marker),
		startWork(t, s, fmt.Sprintf("(setsid sh -c %q &); echo ready; sleep 1000 # %s", daemon, marker)),
	}
	waitForLog(t, s, ids[1], "ready")
	waitForLog(t, s, ids[2], "daemon ready")
	// The first work is not waited for by its output: wait for its process.
	for deadline := time.Now().Add(30 * time.Second); len(processesMatching(t, marker)) < 4; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d processes running, want at least 4", len(processesMatching(t, marker)))
		}
	}
	t0 := time.Now()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// A cap, not a timing: Close sends SIGKILL after the grace instead of
	// waiting for work that traps SIGTERM.
	if took := time.Since(t0); took > 60*time.Second {
		t.Errorf("Close took %v", took)
	}
	if pids := processesMatching(t, marker); len(pids) > 0 {
		t.Fatalf("processes left after Close: %v", pids)
	}
	ended := map[string]string{}
	recs := records(t, f.records)
	for _, r := range recs {
		if r.Kind == audit.KindBackgroundEnd {
			ended[r.WorkID] = string(r.Class)
		}
	}
	for _, id := range ids {
		if ended[id] != broker.WorkStopped {
			t.Errorf("work %s: end record class %q, want stopped (records: %v)", id, ended[id], ended)
		}
	}
	if last := recs[len(recs)-1]; last.Kind != audit.KindSession || last.Decision != "close" {
		t.Errorf("last record = %+v, want the session close after the background ends", last)
	}
	for _, w := range s.Background() {
		if w.State != broker.WorkStopped {
			t.Errorf("after Close: %+v", w)
		}
	}
}

func TestBackgroundCommandRefusals(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	s := f.open(t, sandboxtest.Native(t), nil)
	tests := []struct {
		name, args, want string
	}{
		{"malformed id", `{"operation":"status","work_id":"wrk_xyz"}`, `field "work_id": must be "wrk_" and 16 lower-case hex digits, got "wrk_xyz"`},
		{"never issued", `{"operation":"stop","work_id":"wrk_0123456789abcdef"}`, `field "work_id": no background work "wrk_0123456789abcdef" is known to this session: none was started in it with that id`},
		{"bad operation", `{"operation":"restart","work_id":"wrk_0123456789abcdef"}`, `field "operation": must be "status", "wait" or "stop", got "restart"`},
		{"negative wait", `{"operation":"wait","work_id":"wrk_0123456789abcdef","wait_secs":-5}`, `field "wait_secs": must not be negative, got -5`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := s.Call(context.Background(), "background_command", json.RawMessage(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			if res.Class != broker.ClassRefused || !strings.Contains(res.Output.Content, tt.want) {
				t.Errorf("class %s, output %q; want refused with %q", res.Class, res.Output.Content, tt.want)
			}
		})
	}
}

// TestBackgroundWorkIsPerSession: one session cannot see another's work.
func TestBackgroundWorkIsPerSession(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	b := sandboxtest.Native(t)
	a := f.open(t, b, nil)
	other := f.open(t, b, nil)
	id := startWork(t, a, "sleep 1000")
	res := workCall(t, other, "stop", id, "")
	if res.Class != broker.ClassRefused || !strings.Contains(res.Output.Content, "is known to this session: none was started in it") {
		t.Errorf("another session's stop: %+v", res)
	}
	if len(other.Background()) != 0 || len(a.Background()) != 1 {
		t.Errorf("listings: %v / %v", a.Background(), other.Background())
	}
}

func TestBackgroundCwd(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	s := f.open(t, sandboxtest.Native(t), nil)
	if err := os.Mkdir(f.ws+"/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	id := startWork(t, s, "pwd")
	_ = workCall(t, s, "wait", id, "")
	res := call(t, s, "shell", `{"command":"pwd","cwd":"sub","run_in_background":true}`)
	sub := res.Output.Meta.WorkID
	out := workCall(t, s, "wait", sub, "").Output.Content
	if lastOutput(out) != f.ws+"/sub\n" {
		t.Errorf("pwd in cwd sub = %q", lastOutput(out))
	}
	// Outside the grant: refused before anything starts.
	res = call(t, s, "shell", `{"command":"pwd","cwd":"/etc","run_in_background":true}`)
	if res.Class != broker.ClassRefused || len(s.Background()) != 2 {
		t.Errorf("cwd outside the grant: %+v", res)
	}
	// Not a directory: the model reads why.
	res = call(t, s, "shell", `{"command":"pwd","cwd":"hello.txt","run_in_background":true}`)
	if !res.Output.IsError || !strings.Contains(res.Output.Content, `field "cwd": `) || len(s.Background()) != 2 {
		t.Errorf("cwd a file: %+v", res)
	}
}

// TestBackgroundWorkUsesTheGrantsNetwork: background work gets the egress
// proxy a foreground command gets, and its decisions are audited.
func TestBackgroundWorkUsesTheGrantsNetwork(t *testing.T) {
	if _, err := os.Stat("/usr/bin/curl"); err != nil {
		t.Skip("needs curl on the host (mounted read-only into the sandbox)")
	}
	ws := t.TempDir()
	g, err := grant.FromFlags(ws, grant.Flags{AllowHosts: []string{"allowed.example"}})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{ws: ws, records: t.TempDir(), grant: g}
	s := f.open(t, sandboxtest.Native(t), nil)
	id := startWork(t, s, `echo "proxy=$HTTPS_PROXY"; curl -sS -o /dev/null https://denied.example/ 2>&1; echo curl=$?`)
	out := workCall(t, s, "wait", id, `,"wait_secs":60`).Output.Content
	if !strings.Contains(out, "proxy=http://127.0.0.1:") || strings.Contains(out, "curl=0") {
		t.Fatalf("background work without the grant's proxy, or reaching a denied host:\n%s", out)
	}
	var refused bool
	for _, r := range records(t, f.records) {
		if r.Kind == audit.KindEgress && r.Host == "denied.example" && r.Decision == "refused" {
			refused = true
		}
	}
	if !refused {
		t.Errorf("no refused egress record for denied.example")
	}
}

// TestBackgroundLimitsAreNamed: a limit that ended background work is named
// in its status, and so is every other limit it hit (forks refused before
// the work ran into its wall time). The wall time is the session's, not the
// call's.
func TestBackgroundLimitsAreNamed(t *testing.T) {
	f := newFixture(t, grant.Limits{Time: 1 * time.Second, Memory: 64 << 20, Processes: 32})
	// 10 s: long enough that filling memory or forking 100 times ends
	// the work first, even on a loaded machine.
	s := f.open(t, sandboxtest.Native(t), func(o *broker.Options) { o.BackgroundWall = 10 * time.Second })
	tests := []struct {
		name, command string
		limit         wire.Limit
		sentence      string
		hits          []wire.Limit
	}{
		{"time", "sleep 30", "time", ": exited (killed by signal 9: the background wall-time limit ended it)", []wire.Limit{"time"}},
		{"memory", "head -c 200m /dev/zero >/dev/shm/x; head -c 200m /dev/zero >/tmp/y; sleep 5", "memory", ": exited (killed by signal 9: it ran out of memory)", []wire.Limit{"memory"}},
		{"processes", "for i in $(seq 100); do sleep 10 & done; wait", "processes", ": exited (exit 2: it hit its process limit)", []wire.Limit{"processes"}},
		{"processes, then time", "for i in $(seq 100); do (sleep 10 &) 2>/dev/null || true; done; sleep 30", "time", ": exited (killed by signal 9: the background wall-time limit ended it; it hit its process limit (a fork was refused))", []wire.Limit{"time", "processes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := startWork(t, s, tt.command)
			// Each wait ends at the call's 1 s time limit: wait again
			// until the work has ended.
			out := workCall(t, s, "wait", id, `,"wait_secs":30`).Output
			for i := 0; out.Meta.WorkState == string(broker.WorkRunning) && i < 60; i++ {
				out = workCall(t, s, "wait", id, `,"wait_secs":30`).Output
			}
			if out.Meta.Limit != tt.limit || !slices.Equal(out.Meta.LimitsHit, tt.hits) || !strings.Contains(out.Content, tt.sentence) {
				t.Fatalf("meta %+v, content %q; want the %s limit named", out.Meta, out.Content, tt.limit)
			}
			if info := workInfo(t, s, id); tt.name == "time" && info.Ended.Sub(info.Started) < 2*time.Second {
				t.Errorf("background work ended after %v: the call's 1 s limit applied, not the session's 10 s", info.Ended.Sub(info.Started))
			}
		})
	}
}

// failingBackend cannot build any sandbox: the host lacks a feature.
type failingBackend struct{ sandbox.Backend }

func (failingBackend) Run(context.Context, *sandbox.Spec) (*sandbox.Result, error) {
	return nil, &sandbox.MissingFeatureError{Feature: "user namespaces", Fix: "sysctl -w user.max_user_namespaces=15000"}
}

func TestBackgroundFailedStart(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	s := f.open(t, failingBackend{sandboxtest.Unsandboxed(t)}, nil)
	id := startWork(t, s, "echo never")
	res := workCall(t, s, "wait", id, "")
	if !res.Output.IsError || !strings.Contains(res.Output.Content, "work "+id+": failed: the tool could not run: this host lacks user namespaces") {
		t.Errorf("status of a failed start = %+v", res.Output)
	}
	if info := workInfo(t, s, id); info.State != broker.WorkFailed || info.ExitCode != nil {
		t.Errorf("Background() = %+v", info)
	}
}

func TestBackgroundRefusedStarts(t *testing.T) {
	t.Run("records inside the grant", func(t *testing.T) {
		f := newFixture(t, grant.Limits{})
		f.records = f.ws + "/records"
		s := f.open(t, sandboxtest.Native(t), nil)
		res := call(t, s, "shell", `{"command":"sleep 1","run_in_background":true}`)
		if res.Class != broker.ClassRefused || !strings.Contains(res.Output.Content, "inside the granted path "+f.ws) || len(s.Background()) != 0 {
			t.Errorf("background log inside the grant: %+v", res)
		}
	})
	t.Run("background_command not enabled", func(t *testing.T) {
		ws := t.TempDir()
		g, err := grant.FromFlags(ws, grant.Flags{Tools: []string{"shell"}})
		if err != nil {
			t.Fatal(err)
		}
		f := &fixture{ws: ws, records: t.TempDir(), grant: g}
		s := f.open(t, sandboxtest.Native(t), nil)
		res := call(t, s, "shell", `{"command":"sleep 1","run_in_background":true}`)
		if res.Class != broker.ClassRefused || !strings.Contains(res.Output.Content, `field "run_in_background": background work needs the background_command tool`) {
			t.Errorf("without background_command: %+v", res)
		}
	})
	t.Run("too many at once", func(t *testing.T) {
		f := newFixture(t, grant.Limits{})
		s := f.open(t, sandboxtest.Native(t), func(o *broker.Options) { o.MaxBackground = 2 })
		startWork(t, s, "sleep 1000")
		startWork(t, s, "sleep 1000")
		res := call(t, s, "shell", `{"command":"sleep 1000","run_in_background":true}`)
		if res.Class != broker.ClassRefused || !strings.Contains(res.Output.Content, "2 background commands are already running") {
			t.Errorf("third background command: %+v", res)
		}
	})
}

// TestBackgroundWaitZeroAnswersAtOnce: wait_secs 0 answers with the state
// as it is, while a 30 s command still runs (absent means the default wait).
func TestBackgroundWaitZeroAnswersAtOnce(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	s := f.open(t, sandboxtest.Unsandboxed(t), nil)
	id := startWork(t, s, "sleep 30")
	done := make(chan *broker.Result, 1)
	go func() { done <- workCall(t, s, "wait", id, `,"wait_secs":0`) }()
	var res *broker.Result
	select {
	case res = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("wait_secs 0 did not answer while the 30 s command ran: it waited")
	}
	if res.Output.IsError || res.Output.Meta.WorkState != broker.WorkRunning || !strings.Contains(res.Output.Content, ": running for ") {
		t.Errorf("wait_secs 0 = %+v", res.Output)
	}
}

// stuckBackend runs a sandbox that ignores SIGTERM and cancellation until
// released, as a process stuck in the kernel would.
type stuckBackend struct {
	sandbox.Backend
	release chan struct{}
}

func (b stuckBackend) Run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	<-b.release
	return &sandbox.Result{Signal: 9}, nil
}

// TestBackgroundStopIsBounded: stop gives SIGTERM its grace, then SIGKILL,
// then waits KillWait at most; a work that has not ended by then is reported
// in the state it is in (running), not waited for without end.
func TestBackgroundStopIsBounded(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	b := stuckBackend{Backend: sandboxtest.Unsandboxed(t), release: make(chan struct{})}
	s := f.open(t, b, nil)
	defer close(b.release) // before the session's Close, registered earlier, runs
	id := startWork(t, s, "sleep 1000")
	done := make(chan *broker.Result, 1)
	go func() { done <- workCall(t, s, "stop", id, "") }()
	var res *broker.Result
	select {
	case res = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("stop of a work that does not die never answered")
	}
	if res.Output.Meta.WorkState != broker.WorkRunning || !strings.Contains(res.Output.Content, "had not all ended 3s after SIGKILL") {
		t.Errorf("stop of a stuck work = %+v", res.Output)
	}
}
