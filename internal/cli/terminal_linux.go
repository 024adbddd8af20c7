package cli

import (
	"bytes"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandbox"
)

// execTerminal says whether airlock exec gives the command a terminal:
// when env's standard input and output are both terminals. The command's
// output crosses its terminal's line discipline, which writes each newline
// as CR LF and merges stderr in, so with output sent to a file or a pipe
// (airlock exec -- tar c . > x.tar at a terminal) the command gets pipes,
// and its bytes arrive as it wrote them.
func execTerminal(env *Env) bool {
	return isTerminal(env.Stdin) && isTerminal(env.Stdout)
}

// isTerminal says whether f is a file that is a terminal (standard
// output is one inside the outWriter that watches its writes).
func isTerminal(f any) bool {
	if o, ok := f.(*outWriter); ok {
		f = o.w
	}
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(file.Fd()), unix.TCGETS)
	return err == nil
}

// attachTerminal gives spec a pseudo-terminal when stdin and stdout are
// terminals (execTerminal): the host terminal goes into raw mode (restored
// by the returned func), its size is passed on, and later size changes
// follow on spec.Resize. Input the terminal already held is passed on
// first, as it was typed (pendingInput).
func attachTerminal(env *Env, spec *sandbox.Spec) (func(), error) {
	in, ok := env.Stdin.(*os.File)
	if !ok || !execTerminal(env) {
		return func() {}, nil
	}
	fd := int(in.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return func() {}, nil // not a terminal
	}
	spec.TTY = true
	spec.StderrApart = !isTerminal(env.Stderr)
	if ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err == nil {
		spec.TTYRows, spec.TTYCols = ws.Row, ws.Col
	}
	if t := env.Getenv("TERM"); t != "" {
		spec.Env = broker.SetEnv(spec.Env, "TERM="+t)
	}
	if typed := pendingInput(fd, old); len(typed) > 0 {
		spec.Stdin = io.MultiReader(bytes.NewReader(typed), spec.Stdin)
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return nil, err
	}
	// Job control: a shell puts its own settings back when a job stops
	// and does not give the job's back on fg, so airlock takes the
	// terminal raw again each time it is continued (SIGCONT: after a
	// SIGTSTP, a SIGTTOU or SIGTTIN, or a SIGSTOP it cannot catch), and
	// passes on the size, which may have changed meanwhile. A SIGTSTP
	// (kill -TSTP; at the raw terminal ^Z is the command's) gives the
	// terminal back before airlock stops, for a parent that does not.
	// The sandbox runs on while airlock is stopped, within its limits.
	winch := make(chan os.Signal, 1)
	jobs := make(chan os.Signal, 2)
	signal.Notify(winch, syscall.SIGWINCH)
	signal.Notify(jobs, syscall.SIGTSTP, syscall.SIGCONT)
	sizes := make(chan sandbox.TTYSize, 1)
	resize := func() {
		ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
		if err != nil {
			return
		}
		select { // the newest size replaces one not yet passed on
		case <-sizes:
		default:
		}
		select {
		case sizes <- sandbox.TTYSize{Rows: ws.Row, Cols: ws.Col}:
		default:
		}
	}
	var mu sync.Mutex // held while the terminal's settings change
	restored := false
	setTermios := func(t *unix.Termios) {
		mu.Lock()
		defer mu.Unlock()
		if !restored {
			_ = unix.IoctlSetTermios(fd, unix.TCSETS, t)
		}
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-winch:
				resize()
			case s := <-jobs:
				if s == syscall.SIGTSTP {
					setTermios(old)
					_ = unix.Kill(os.Getpid(), unix.SIGSTOP)
					continue // SIGCONT follows
				}
				setTermios(&raw)
				resize()
			}
		}
	}()
	restore := func() {
		signal.Stop(winch)
		signal.Stop(jobs)
		close(done)
		mu.Lock()
		defer mu.Unlock()
		restored = true
		_ = unix.IoctlSetTermios(fd, unix.TCSETS, old)
	}
	spec.Resize = sizes
	return restore, nil
}

// pendingInput reads, while the terminal is still in canonical mode, the
// input its line discipline already holds for a reader, so that it reaches
// the command as it was typed. The line discipline keeps an end-of-file
// (VEOF, ^D: typed ahead, or sent by a program such as script(1) when its
// own input ends) as a NUL marker that ends the line; a read in canonical
// mode drops it, but once the terminal is raw it reads as a real NUL byte,
// which the command's terminal echoes as "^@". Here each complete line is
// kept as read and each end-of-file becomes the VEOF character again, the
// byte a raw terminal would have passed on. A partial line stays queued
// (its bytes read the same in raw mode). Input typed between this read and
// the switch to raw mode can still turn a ^D into a NUL; the window is the
// two system calls between them.
func pendingInput(fd int, t *unix.Termios) []byte {
	if t.Lflag&unix.ICANON == 0 {
		return nil
	}
	eof := t.Cc[unix.VEOF]
	if eof == 0 {
		eof = 4 // ^D, the command's own terminal's default
	}
	var typed []byte
	buf := make([]byte, 4096)
	for range 1024 {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 0)
		if err != nil || n != 1 || fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 || fds[0].Revents&unix.POLLIN == 0 {
			break
		}
		m, err := unix.Read(fd, buf)
		if err != nil {
			break
		}
		if m == 0 {
			typed = append(typed, eof)
			continue
		}
		typed = append(typed, buf[:m]...)
	}
	return typed
}
