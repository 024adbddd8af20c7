package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/procid"
)

// TestExecTimeLimitHoldsWhileAirlockIsStopped: the sandbox ends at its time
// limit even while airlock itself is stopped by job control. Here the
// command's own output stops it: airlock exec runs as a background job of
// a terminal set to tostop, so relaying the command's first line to that
// terminal stops airlock (SIGTTOU), as Ctrl-Z at a terminal whose input is
// not airlock's, or any SIGTSTP or SIGSTOP, stops it too. The time limit
// was enforced only by a timer in airlock's own process, so the sandbox
// then ran on for as long as the job stayed stopped: minutes, or for good
// (its sleep outlived a 2s limit for as long as the test waited).
func TestExecTimeLimitHoldsWhileAirlockIsStopped(t *testing.T) {
	airlock, err := exec.LookPath("airlock")
	if err != nil {
		t.Fatalf("the test binary is not on PATH as airlock: %v", err)
	}
	master, slave := openPTY(t)
	defer master.Close()
	defer slave.Close()
	out := readPTY(master)

	// A number no other process has in its command line: the sandbox's sleep.
	mark := strconv.Itoa(900_000_000 + os.Getpid())
	state, errs := t.TempDir(), filepath.Join(t.TempDir(), "stderr")
	flags := strings.Join(execFlags(), " ")
	script := `stty tostop; set -m
"$AIRLOCK" exec ` + flags + ` --time 2s -- sh -c 'echo out; exec sleep ` + mark + `' </dev/null 2>"$ERRS" &
echo "pid $!"
exec sleep 3600`
	sh := exec.Command("/bin/sh", "-c", script)
	sh.Dir = t.TempDir()
	sh.Env = append(os.Environ(), "AIRLOCK="+airlock, "ERRS="+errs, "AIRLOCK_STATE_DIR="+state)
	sh.Stdin, sh.Stdout, sh.Stderr = slave, slave, slave
	sh.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	t.Cleanup(func() {
		if pid > 0 {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		_ = sh.Process.Kill()
		_ = sh.Wait()
	})
	out.waitFor(t, "pid ")
	m := regexp.MustCompile(`pid (\d+)\r?\n`)
	out.waitFor(t, "\n")
	sub := m.FindStringSubmatch(out.String())
	if sub == nil {
		t.Fatalf("no pid in %q", out.String())
	}
	pid, _ = strconv.Atoi(sub[1])

	// The command's "out" stops airlock.
	waitState(t, pid, "T", time.Minute)
	// The sandbox must end at its limit all the same, with airlock stopped.
	deadline := time.Now().Add(30 * time.Second)
	for len(processesWith(mark)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the sandbox's command (%v) still runs 30s after airlock was stopped, past its 2s time limit", processesWith(mark))
		}
		time.Sleep(10 * time.Millisecond) //permit:time.Sleep (a bounded poll of /proc)
	}
	if s := procState(pid); s != "T" {
		t.Fatalf("airlock was continued (state %q) before the sandbox ended: the test proves nothing", s)
	}

	// Continued, with the terminal no longer stopping its output, airlock
	// says the time limit ended the command and exits 137.
	tio, err := unix.IoctlGetTermios(int(master.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Lflag &^= unix.TOSTOP
	if err := unix.IoctlSetTermios(int(master.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	if err := unix.Kill(pid, unix.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitState(t, pid, "Z", time.Minute)
	if code := exitStatusOf(t, pid); code != 137<<8 {
		t.Errorf("airlock's wait status %#x, want exit 137", code)
	}
	b, _ := os.ReadFile(errs)
	if !strings.Contains(string(b), "ran past its time limit (2s)") {
		t.Errorf("stderr %q, want the time limit named", b)
	}
	var log bytes.Buffer
	if code := Main(context.Background(), []string{"log", "--json", "--records", state}, strings.NewReader(""), &log, &log); code != 0 {
		t.Fatalf("airlock log: %d %s", code, &log)
	}
	if !strings.Contains(log.String(), `"class":"timeout"`) {
		t.Errorf("the call's record is not a timeout: %s", &log)
	}
}

// processesWith returns the host processes whose command line holds s.
func processesWith(s string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if bytes.Contains(b, []byte(s)) && !bytes.Contains(b, []byte("exec")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procState is the state letter of process pid ("" when it is gone).
func procState(pid int) string {
	if f := procid.StatFields(pid); len(f) > 0 {
		return f[0]
	}
	return ""
}

// waitState waits until process pid is in state s, for at most limit.
func waitState(t *testing.T, pid int, s string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for procState(pid) != s {
		if time.Now().After(deadline) {
			t.Fatalf("process %d is in state %q after %v, want %q", pid, procState(pid), limit, s)
		}
		time.Sleep(5 * time.Millisecond) //permit:time.Sleep (a bounded poll of /proc)
	}
}

// exitStatusOf is the wait status of the zombie pid (the last field of
// its /proc/pid/stat).
func exitStatusOf(t *testing.T, pid int) int {
	t.Helper()
	f := procid.StatFields(pid)
	if len(f) == 0 {
		t.Fatalf("process %d is gone", pid)
	}
	n, err := strconv.Atoi(f[len(f)-1])
	if err != nil {
		t.Fatal(err)
	}
	return n
}
