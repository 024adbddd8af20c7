package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestExecTerminalAfterStopAndFg: airlock exec on a terminal, stopped by
// job control (kill -TSTP, a SIGTTOU, kill -STOP) and brought back with fg,
// takes the terminal raw again. A shell puts its own settings back when a
// job stops and does not give the job's back on fg, so airlock went on
// relaying a cooked terminal: every line was echoed twice (by the host's
// line discipline and by the sandbox's), keys such as ^C and ^Z were the
// host's again, and nothing reached the command before a newline. It also
// gives the terminal back while it is stopped, for a parent that does not.
func TestExecTerminalAfterStopAndFg(t *testing.T) {
	airlock, err := exec.LookPath("airlock")
	if err != nil {
		t.Fatalf("the test binary is not on PATH as airlock: %v", err)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash for a shell with job control")
	}
	master, slave := openPTY(t)
	defer master.Close()
	defer slave.Close()
	out := readPTY(master)

	dir := t.TempDir()
	sh := exec.Command(bash, "--norc", "--noprofile", "-i")
	sh.Dir = dir
	sh.Env = append(os.Environ(), "PS1=PROMPT$ ", "AIRLOCK="+airlock, "AIRLOCK_STATE_DIR="+t.TempDir(), "TERM=dumb")
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
	out.waitFor(t, "PROMPT$ ")
	flags := strings.Join(execFlags(), " ")
	type_ := func(s string) {
		t.Helper()
		if _, err := master.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	type_(`"$AIRLOCK" exec ` + flags + ` -- sh -c 'echo STARTED; read x; echo "GOT:$x"; read y; echo "GOT2:$y"'` + "\n")
	out.waitFor(t, "STARTED\r\n")
	pid = childOf(t, sh.Process.Pid)
	if !raw(t, master) {
		t.Fatal("the terminal is not raw while the command runs")
	}

	if err := unix.Kill(pid, unix.SIGTSTP); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "Stopped")
	if raw(t, master) {
		t.Error("the terminal is raw while airlock is stopped")
	}
	if !waitRaw(t, master, false) {
		t.Fatal("unreachable")
	}
	mark := len(out.String())
	type_("fg\n")
	if !waitRaw(t, master, true) {
		t.Errorf("after fg the terminal stays cooked: airlock did not take it raw again")
	}
	type_("hello\r")
	out.waitFor(t, "GOT:hello")
	if n := strings.Count(out.String()[mark:], "hello"); n != 2 {
		t.Errorf("after fg, %q shows hello %d times, want 2 (the sandbox's echo and the command's)", out.String()[mark:], n)
	}

	// kill -STOP, which airlock cannot catch, and the same again. The
	// shell's new "Stopped" and its cooked terminal are waited for before
	// fg is typed: the first stop's "Stopped" is already shown, and the
	// terminal stays raw (airlock cannot give it back) until the shell
	// has seen the stop, so typing at once let the shell's read take
	// "again" along with "fg", and the command waited for it for ever.
	mark = len(out.String())
	if err := unix.Kill(pid, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitState(t, pid, "T", time.Minute)
	out.waitForAfter(t, mark, "Stopped")
	if !waitRaw(t, master, false) {
		t.Fatal("the shell did not take the terminal back after kill -STOP")
	}
	type_("fg\n")
	if !waitRaw(t, master, true) {
		t.Errorf("after kill -STOP and fg the terminal stays cooked")
	}
	type_("again\r")
	out.waitFor(t, "GOT2:again")
	out.waitFor(t, "PROMPT$ ")
}

// raw reports whether the terminal of master reads byte by byte, unechoed.
func raw(t *testing.T, master *os.File) bool {
	t.Helper()
	tio, err := unix.IoctlGetTermios(int(master.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	return tio.Lflag&(unix.ICANON|unix.ECHO|unix.ISIG) == 0
}

// waitRaw waits until the terminal of master is raw (or cooked), for at
// most 30 seconds, and reports whether it became so.
func waitRaw(t *testing.T, master *os.File, want bool) bool {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for raw(t, master) != want {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond) //permit:time.Sleep (a bounded poll of the terminal's settings)
	}
	return true
}

// childOf returns the one child of process pid.
func childOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", strconv.Itoa(pid), "children"))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 1 {
		t.Fatalf("process %d has children %q, want one", pid, f)
	}
	n, _ := strconv.Atoi(f[0])
	return n
}
