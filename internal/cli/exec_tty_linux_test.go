package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

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
	out := readPTY(master)

	t.Setenv("AIRLOCK_STATE_DIR", t.TempDir())
	t.Chdir(t.TempDir())
	var stderr bytes.Buffer
	env := &Env{Stdin: slave, Stdout: slave, Stderr: &stderr, Getenv: os.Getenv}
	code := commandByName("exec").run(context.Background(), env, append(execFlags(), "--", "sh", "-c", "tty; stty size; test -t 0 && echo stdin-is-a-tty; echo END"))
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
	// The command's last line, then what it showed. (The terminal does
	// not close when airlock is done: waiting for that, then reading what
	// came within a second, raced the reader of the terminal.)
	out.waitFor(t, "END")
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

// ptyOutput collects what a pseudo-terminal's master reads, and lets a test
// wait until it holds a string.
type ptyOutput struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced on every read
	done    chan struct{} // closed when the master reads EOF or an error
}

func readPTY(master *os.File) *ptyOutput {
	o := &ptyOutput{changed: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(o.done)
		b := make([]byte, 4096)
		for {
			n, err := master.Read(b)
			o.mu.Lock()
			o.buf.Write(b[:n])
			close(o.changed)
			o.changed = make(chan struct{})
			o.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return o
}

func (o *ptyOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitFor waits until the output holds s, or fails the test when the
// terminal closes first.
func (o *ptyOutput) waitFor(t *testing.T, s string) {
	t.Helper()
	o.waitForAfter(t, 0, s)
}

// waitForAfter waits until the output past its first mark bytes holds s,
// or fails the test when the terminal closes first.
func (o *ptyOutput) waitForAfter(t *testing.T, mark int, s string) {
	t.Helper()
	for {
		o.mu.Lock()
		has, changed := strings.Contains(o.buf.String()[mark:], s), o.changed
		o.mu.Unlock()
		if has {
			return
		}
		select {
		case <-changed:
		case <-o.done:
			t.Fatalf("the terminal closed before showing %q; it showed %q", s, o.String())
		}
	}
}

// queued waits until the terminal's line discipline holds input for a
// reader (a complete line, or an end-of-file).
func queued(t *testing.T, slave *os.File) {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(slave.Fd()), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n != 1 {
			t.Fatalf("poll: %d, %v", n, err)
		}
		return
	}
}

// TestExecTerminalInputHasNoNUL: input the caller's terminal held before
// airlock made it raw reaches the command as it was typed. An end-of-file
// (^D) typed, or sent by a program such as script(1), while the terminal
// was still in canonical mode is kept by the line discipline as a NUL
// marker, which a read in raw mode returns as a real NUL byte: the command
// saw "^@" instead of the end of its input. It must see the end of input,
// and never a NUL.
func TestExecTerminalInputHasNoNUL(t *testing.T) {
	t.Setenv("AIRLOCK_STATE_DIR", t.TempDir())
	t.Chdir(t.TempDir())
	run := func(t *testing.T, typed string) string {
		master, slave := openPTY(t)
		defer master.Close()
		defer slave.Close()
		if _, err := master.Write([]byte(typed)); err != nil {
			t.Fatal(err)
		}
		queued(t, slave)
		out := readPTY(master)
		var stderr bytes.Buffer
		env := &Env{Stdin: slave, Stdout: slave, Stderr: &stderr, Getenv: os.Getenv}
		code := make(chan int, 1)
		go func() {
			code <- commandByName("exec").run(context.Background(), env, []string{"--", "sh", "-c", "echo ready; od -c; echo od-done"})
		}()
		out.waitFor(t, "ready")
		// Whatever od has not read yet ends now, as typed on a raw terminal.
		if _, err := master.Write([]byte("\n\x04")); err != nil {
			t.Fatal(err)
		}
		if c := <-code; c != 0 {
			t.Fatalf("exit %d; stderr %s; terminal %q", c, stderr.String(), out.String())
		}
		out.waitFor(t, "od-done")
		return out.String()
	}
	for i := 0; i < 5; i++ {
		got := run(t, "\x04")
		if strings.Contains(got, "^@") || strings.Contains(got, `\0`) {
			t.Fatalf("run %d: the command read a NUL that nobody typed: %q", i, got)
		}
		// od of an empty input prints one offset and nothing else. (The
		// terminal may also echo the newline written after "ready".)
		if offsets := odOffsets(got); len(offsets) != 1 || offsets[0] != "0000000" {
			t.Fatalf("run %d: od did not read an empty input: %q", i, got)
		}
	}
	// A line typed ahead is not lost on the way.
	got := run(t, "typed ahead\n\x04")
	if !strings.Contains(got, "t   y   p   e   d       a   h   e   a   d  \\n") || strings.Contains(got, `\0`) {
		t.Fatalf("the line typed ahead did not arrive as typed: %q", got)
	}
}

// odOffsets returns the offsets at the start of od's lines in out.
func odOffsets(out string) []string {
	var offsets []string
	for _, line := range strings.Split(out, "\r\n") {
		if len(line) >= 7 && strings.Trim(line[:7], "01234567") == "" {
			offsets = append(offsets, line[:7])
		}
	}
	return offsets
}

// TestExecTerminalFollowsResize: when the caller's terminal changes size
// (SIGWINCH) while the command runs, the command's terminal takes the new
// size and the command gets SIGWINCH (the size travels on Spec.Resize).
func TestExecTerminalFollowsResize(t *testing.T) {
	t.Setenv("AIRLOCK_STATE_DIR", t.TempDir())
	t.Chdir(t.TempDir())
	master, slave := openPTY(t)
	defer master.Close()
	defer slave.Close()
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 10, Col: 20}); err != nil {
		t.Fatal(err)
	}
	out := readPTY(master)
	var stderr bytes.Buffer
	env := &Env{Stdin: slave, Stdout: slave, Stderr: &stderr, Getenv: os.Getenv}
	code := make(chan int, 1)
	go func() {
		code <- commandByName("exec").run(context.Background(), env, append(execFlags(), "--", "sh", "-c",
			`trap 'echo "size $(stty size)"; exit 0' WINCH; echo ready; while :; do sleep 0.05; done`))
	}()
	out.waitFor(t, "ready")
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 44, Col: 120}); err != nil {
		t.Fatal(err)
	}
	// The test's pty has no session to signal: tell airlock, as the kernel
	// tells the foreground process of a real terminal.
	if err := unix.Kill(os.Getpid(), unix.SIGWINCH); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "size 44 120")
	if c := <-code; c != 0 {
		t.Fatalf("exit %d; stderr %s; terminal %q", c, stderr.String(), out.String())
	}
}
