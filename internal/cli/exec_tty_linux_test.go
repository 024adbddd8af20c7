package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// execFlags are the flags these tests give exec: an unprivileged run, where
// the host may give no cgroup for the memory and process limits, accepts
// that (these tests are about terminals, not limits).
func execFlags() []string {
	if os.Geteuid() != 0 {
		return []string{"--allow-unenforced-limits"}
	}
	return nil
}

// openPTY returns a new pseudo-terminal's master and slave.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

// TestExecPassesATerminalThrough: with a terminal on stdin, the command gets
// a terminal of its own (a new pty, never the caller's) of the caller's size,
// and the caller's terminal settings are restored afterwards.
func TestExecPassesATerminalThrough(t *testing.T) {
	master, slave := openPTY(t)
	defer master.Close()
	defer slave.Close()
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 33, Col: 101}); err != nil {
		t.Fatal(err)
	}
	before, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&out, master); close(done) }()

	t.Setenv("AIRLOCK_STATE_DIR", t.TempDir())
	t.Chdir(t.TempDir())
	var stderr bytes.Buffer
	env := &Env{Stdin: slave, Stdout: slave, Stderr: &stderr, Getenv: os.Getenv}
	code := commandByName("exec").run(context.Background(), env, append(execFlags(), "--", "sh", "-c", "tty; stty size; test -t 0 && echo stdin-is-a-tty"))
	if code != 0 {
		t.Fatalf("exit %d; stderr %s", code, stderr.String())
	}
	after, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if after.Lflag != before.Lflag || after.Iflag != before.Iflag || after.Oflag != before.Oflag {
		t.Errorf("terminal settings not restored: before %+v after %+v", before, after)
	}
	slave.Close()
	select {
	case <-done:
	case <-time.After(time.Second):
	}
	got := out.String()
	if strings.Contains(got, "not a tty") {
		t.Errorf("the command had no terminal: %q", got)
	}
	for _, want := range []string{"/dev/", "33 101", "stdin-is-a-tty"} {
		if !strings.Contains(got, want) {
			t.Errorf("output %q lacks %q", got, want)
		}
	}
}

// TestExecWithoutTerminal: piped stdin stays a pipe; no terminal is made up.
func TestExecWithoutTerminal(t *testing.T) {
	t.Setenv("AIRLOCK_STATE_DIR", t.TempDir())
	t.Chdir(t.TempDir())
	var stdout, stderr bytes.Buffer
	env := &Env{Stdin: strings.NewReader("from a pipe\n"), Stdout: &stdout, Stderr: &stderr, Getenv: os.Getenv}
	code := commandByName("exec").run(context.Background(), env, append(execFlags(), "--", "sh", "-c", "test -t 0 || echo not-a-tty; cat"))
	if code != 0 {
		t.Fatalf("exit %d; stderr %s", code, stderr.String())
	}
	if got := stdout.String(); got != "not-a-tty\nfrom a pipe\n" {
		t.Fatalf("stdout = %q", got)
	}
}

func commandByName(name string) *command { return lookup(name) }
