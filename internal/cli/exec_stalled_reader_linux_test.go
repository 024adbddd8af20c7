package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/audit"
)

// TestExecKillWithAStalledReader: airlock exec whose output's reader stays
// but no longer reads (a pager stopped, a consumer wedged) still ends when
// told to kill (a second SIGTERM, SIGQUIT) or past its time limit: the
// sandbox dies, the session records the call and closes, its placeholders
// (the protected names it made in the working directory) and cgroup are
// removed, and airlock exits with the command's status. The relay waited
// for its write of the command's last output to the full pipe, for ever:
// the sandbox was dead but airlock hung in its teardown, with the call
// unrecorded and the placeholders in the user's tree, and only SIGKILL
// ended it, which left them there until a later start of airlock swept
// them.
func TestExecKillWithAStalledReader(t *testing.T) {
	airlock, err := exec.LookPath("airlock")
	if err != nil {
		t.Fatalf("the test binary is not on PATH as airlock: %v", err)
	}
	for _, tt := range []struct {
		name    string
		flags   []string
		signals []syscall.Signal
		want    syscall.Signal // what the command died of
	}{
		// The first SIGTERM ends yes, whose last output stays unwritten.
		{"second SIGTERM", nil, []syscall.Signal{syscall.SIGTERM, syscall.SIGTERM}, syscall.SIGTERM},
		{"SIGQUIT", nil, []syscall.Signal{syscall.SIGQUIT}, syscall.SIGKILL},
		// No signal: the time limit ends the call.
		{"time limit", []string{"--time", "1s"}, nil, syscall.SIGKILL},
		// The sandbox on remote hands, its output relayed by the broker.
		{"remote SIGQUIT", []string{"--remote", "stdio:" + airlock + " tool-server --root ."}, []syscall.Signal{syscall.SIGQUIT}, syscall.SIGKILL},
	} {
		t.Run(tt.name, func(t *testing.T) {
			state, work := t.TempDir(), t.TempDir()
			cmd := exec.Command(airlock, append(append(append([]string{"exec"}, execFlags()...), tt.flags...), "--", "sh", "-c", "touch started; exec yes")...)
			cmd.Dir = work
			cmd.Env = append(os.Environ(), "AIRLOCK_STATE_DIR="+state)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			// The reader: open for the whole test, never read.
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			cmd.Stdout = w
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close()
			exited := make(chan struct{})
			go func() { _ = cmd.Wait(); close(exited) }()
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-exited
			})
			waitForFile(t, filepath.Join(work, "started"), exited, &stderr)
			waitPipeFull(t, r, exited)
			for i, s := range tt.signals {
				if i > 0 {
					// Two SIGTERMs pending at once are one: the second
					// goes once the first has ended the command.
					waitNoDescendant(t, cmd.Process.Pid, "yes", exited)
				}
				if err := cmd.Process.Signal(s); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case <-exited:
			case <-time.After(60 * time.Second):
				t.Fatalf("airlock exec still runs 60s after %v with a reader that does not read; stderr %q", tt.signals, &stderr)
			}
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if ws.Signaled() || ws.ExitStatus() != 128+int(tt.want) {
				t.Errorf("airlock exec ended %v, want exit %d (the command's %v); stderr %q", cmd.ProcessState, 128+int(tt.want), tt.want, &stderr)
			}
			var called bool
			for _, rec := range records(t, state) {
				called = called || rec.Kind == audit.KindCall && rec.Class != audit.ClassInterrupted
			}
			if !called || !hasCloseRecord(t, state) {
				t.Errorf("the call has a record: %v; the session a close record: %v", called, hasCloseRecord(t, state))
			}
			left, err := os.ReadDir(work)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range left {
				if e.Name() != "started" {
					t.Errorf("airlock exec left %s in the working directory", e.Name())
				}
			}
		})
	}
}

// waitNoDescendant waits until no descendant of pid is named comm,
// failing when the process ends first.
func waitNoDescendant(t *testing.T, pid int, comm string, exited <-chan struct{}) {
	t.Helper()
	for {
		parents, names := map[int]int{}, map[int]string{}
		procs, _ := os.ReadDir("/proc")
		for _, p := range procs {
			n, err := strconv.Atoi(p.Name())
			if err != nil {
				continue
			}
			b, err := os.ReadFile("/proc/" + p.Name() + "/stat")
			if err != nil {
				continue
			}
			// pid (comm) state ppid ...
			open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
			if open < 0 || end < open {
				continue
			}
			f := strings.Fields(string(b[end+1:]))
			if len(f) < 2 {
				continue
			}
			ppid, _ := strconv.Atoi(f[1])
			parents[n], names[n] = ppid, string(b[open+1:end])
		}
		found := false
		for n, name := range names {
			if name != comm {
				continue
			}
			for a := parents[n]; a > 1; a = parents[a] {
				if a == pid {
					found = true
					break
				}
			}
		}
		if !found {
			return
		}
		select {
		case <-exited:
			t.Fatal("airlock exec ended before its command did")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitPipeFull waits until the pipe r reads from holds all it can, so that
// its writer is blocked, failing when the process ends first.
func waitPipeFull(t *testing.T, r *os.File, exited <-chan struct{}) {
	t.Helper()
	size, err := unix.FcntlInt(r.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if n, err := unix.IoctlGetInt(int(r.Fd()), unix.TIOCINQ); err == nil && n >= size {
			return
		}
		select {
		case <-exited:
			t.Fatal("airlock exec ended before its output filled the pipe")
		case <-time.After(10 * time.Millisecond):
		}
	}
}
