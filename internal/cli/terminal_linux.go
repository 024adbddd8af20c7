package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
)

// attachTerminal gives spec a pseudo-terminal when stdin is a terminal: the
// host terminal goes into raw mode (restored by the returned func), its size
// is passed on, and later size changes follow through ctx.
func attachTerminal(ctx context.Context, env *Env, spec *sandbox.Spec) (func(), context.Context, error) {
	in, ok := env.Stdin.(*os.File)
	if !ok {
		return func() {}, ctx, nil
	}
	fd := int(in.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return func() {}, ctx, nil // not a terminal
	}
	spec.TTY = true
	if ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err == nil {
		spec.TTYRows, spec.TTYCols = ws.Row, ws.Col
	}
	if t := env.Getenv("TERM"); t != "" {
		spec.Env = setEnv(spec.Env, "TERM="+t)
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return nil, ctx, err
	}
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	sizes := make(chan linux.TermSize, 1)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-winch:
				if ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err == nil {
					select {
					case sizes <- linux.TermSize{Rows: ws.Row, Cols: ws.Col}:
					default:
					}
				}
			}
		}
	}()
	restore := func() {
		signal.Stop(winch)
		close(done)
		_ = unix.IoctlSetTermios(fd, unix.TCSETS, old)
	}
	return restore, linux.WithResize(ctx, sizes), nil
}
