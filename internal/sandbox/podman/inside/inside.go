package inside

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox/diskguard"
)

// Mode is the argument that starts the airlock binary as a container's
// init.
const Mode = "__podman"

// ExitSetup is the init's status when it could not set up (bad arguments,
// no forwarder): the broker reports "could not run".
const ExitSetup = 125

// Main runs the init with args (after the mode). runTool runs the tool
// runner on the given streams, cancelling the tool when ctx is done (the
// broker's stop), and returns its exit code.
func Main(args []string, runTool func(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) int) int {
	fs := flag.NewFlagSet("__podman", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	deadline := fs.Int64("deadline", 0, "seconds")
	proxy := fs.String("proxy", "", "proxy socket")
	port := fs.Int("proxy-port", 0, "forwarder port")
	ctlFD := fs.Int("control", -1, "descriptor of the broker's control pipe")
	repFD := fs.Int("report", -1, "descriptor of the broker's report pipe")
	envFD := fs.Int("env", -1, "descriptor of the broker's environment pipe")
	var guarded []string
	fs.Func("disk-guard", "a writable mount whose file system the init guards (repeated)", func(p string) error {
		guarded = append(guarded, p)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return ExitSetup
	}
	if err := setEnv(*envFD); err != nil {
		fmt.Fprintf(os.Stderr, "airlock container init: %v\n", err)
		return ExitSetup
	}
	ctl := control(*ctlFD)
	rep := reportFile(*repFD)
	if *deadline <= 0 {
		fmt.Fprintln(os.Stderr, "airlock container init: --deadline is required")
		return ExitSetup
	}
	if *proxy != "" {
		if err := forward(*proxy, *port); err != nil {
			fmt.Fprintf(os.Stderr, "airlock container init: %v\n", err)
			return ExitSetup
		}
	}
	if err := lockdown(); err != nil {
		fmt.Fprintf(os.Stderr, "airlock container init: %v\n", err)
		return ExitSetup
	}
	// At the deadline PID 1 exits, and the kernel kills the rest of the
	// container: nothing outlives the call even if the broker died or is
	// stopped by job control.
	time.AfterFunc(time.Duration(*deadline)*time.Second+time.Second, func() { end(rep, ReportTime) })
	// The init guards the disk as the broker does (package diskguard),
	// on the same file systems as the container sees them: the broker's
	// guard is a poll of its process, which job control stops. Opened
	// before the payload runs, so all it writes counts.
	if len(guarded) > 0 {
		diskguard.Open(guarded, 0).Watch(func() { end(rep, ReportDisk) })
	}
	if fs.NArg() == 0 {
		// The stop (on the control pipe, or a SIGTERM) cancels the
		// runner's context, which stays cancelled: a stop before the
		// runner started is not lost. SIGTERM reaches every process of
		// the container, daemons that left the tool's process group
		// included.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		term := make(chan os.Signal, 4)
		signal.Notify(term, syscall.SIGTERM)
		var stopped atomic.Bool
		stop := func() {
			stopped.Store(true)
			cancel()
			killAll(syscall.SIGTERM)
		}
		quit := make(chan struct{})
		handled := make(chan struct{})
		go func() {
			defer close(handled)
			for {
				select {
				case <-term:
					stop()
				case s := <-ctl:
					if s == syscall.SIGTERM {
						stop()
					}
				case <-quit:
					return
				}
			}
		}()
		code := runTool(ctx, os.Stdin, os.Stdout, os.Stderr)
		close(quit)
		<-handled
		// Every SIGTERM that arrived is handled before stopped is read.
		// term stays subscribed until the init exits: a later SIGTERM is
		// caught, not the death of a Go PID 1 that cannot die (exit 2).
	drain:
		for {
			select {
			case <-term:
				stop()
			default:
				break drain
			}
		}
		if stopped.Load() {
			// Let every process that heard the stop shut down cleanly:
			// PID 1 exiting would SIGKILL them. The broker's grace, then
			// its kill, bound the wait.
			waitAll()
		}
		report(rep)
		return code
	}
	code := command(fs.Args(), ctl)
	report(rep)
	return code
}

// command runs argv as a child, passing on SIGTERM, SIGINT and SIGHUP
// (as signals or on ctl), and returns its status (128+N when killed by
// signal N).
func command(argv []string, ctl <-chan syscall.Signal) int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "airlock: %v\n", err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return 127
		}
		return 126
	}
	var stopped atomic.Bool
	handled := make(chan struct{})
	go func() {
		defer close(handled)
		for {
			var s os.Signal
			select {
			case sig, ok := <-sigs:
				if !ok {
					return
				}
				s = sig
			case sig := <-ctl:
				s = sig
			}
			switch s {
			case syscall.SIGTERM:
				stopped.Store(true)
				killAll(syscall.SIGTERM) // every process, as on the native backend
			case syscall.SIGINT, syscall.SIGHUP:
				_ = cmd.Process.Signal(s)
			}
		}
	}()
	err := cmd.Wait()
	signal.Stop(sigs)
	close(sigs)
	<-handled
	if stopped.Load() {
		waitAll() // see Main
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		return 126
	}
	return 0
}

// forward listens on 127.0.0.1:port and bridges each connection to the
// proxy's Unix socket.
func forward(sock string, port int) error {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("listening for the proxy forwarder: %w", err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go bridge(c, sock)
		}
	}()
	return nil
}

func bridge(c net.Conn, sock string) {
	defer c.Close()
	u, err := net.Dial("unix", sock)
	if err != nil {
		return
	}
	defer u.Close()
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(u, c)
		if cw, ok := u.(*net.UnixConn); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(c, u)
		if cw, ok := c.(*net.TCPConn); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}()
	<-done
	<-done
}
