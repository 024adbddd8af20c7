package direct_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/direct"
)

// TestOutputOfAnEndedCommandIsAllRead: what a command wrote before it
// exited is delivered whole, however slowly the caller takes it (a
// terminal, a full pipe, a goroutine that a loaded machine runs late).
// The backend closed its pipes 100 ms after the command ended, for a
// grandchild holding them, and so dropped what the pipe still held.
func TestOutputOfAnEndedCommandIsAllRead(t *testing.T) {
	b, err := direct.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	const size = 256 << 10 // four pipe buffers
	var stdout slowCounter
	var stderr strings.Builder
	res, err := b.Run(context.Background(), &sandbox.Spec{
		Command: []string{"/bin/sh", "-c", "head -c 262144 /dev/zero"},
		Stdout:  &stdout, Stderr: &stderr,
		Limits: sandbox.Limits{Wall: time.Minute, OutputBytes: 1 << 20},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := stdout.n.Load(); got != size || res.ExitCode != 0 || res.OutputTruncated {
		t.Fatalf("got %d of the %d bytes written (exit %d, truncated %v, stderr %q)", got, size, res.ExitCode, res.OutputTruncated, stderr.String())
	}
}

// slowCounter counts what is written to it, taking its time.
type slowCounter struct{ n atomic.Int64 }

func (c *slowCounter) Write(p []byte) (int, error) {
	time.Sleep(100 * time.Millisecond)
	c.n.Add(int64(len(p)))
	return len(p), nil
}

var _ io.Writer = (*slowCounter)(nil)

// TestPipeHeldOutsideTheGroupDoesNotHoldTheCall: a process that left the
// command's group (setsid) and keeps its output open does not hold the
// call once the command has ended and its output is read.
func TestPipeHeldOutsideTheGroupDoesNotHoldTheCall(t *testing.T) {
	b, err := direct.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	var stdout strings.Builder
	done := make(chan error, 1)
	go func() {
		_, err := b.Run(context.Background(), &sandbox.Spec{
			// $! is the sleep's pid: setsid execs it in place.
			Command: []string{"/bin/sh", "-c", "setsid sleep 987653 & echo $!"},
			Stdout:  &stdout, Stderr: io.Discard,
			Limits: sandbox.Limits{Wall: 10 * time.Minute},
		})
		done <- err
	}()
	select {
	case err := <-done:
		pid, perr := strconv.Atoi(strings.TrimSpace(stdout.String()))
		if perr == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if err != nil || perr != nil {
			t.Fatalf("Run: %v, stdout %q", err, stdout.String())
		}
	case <-time.After(5 * time.Minute):
		t.Fatal("the call waits for a process outside its group that holds its output")
	}
}

// TestWriterOutsideTheGroupDoesNotHoldTheCall: a process that left the
// command's group and writes for ever, to a reader slower than it, keeps
// the pipe from ever being empty; the call still ends, its pipes closed
// after sandbox.OutputGrace.
func TestWriterOutsideTheGroupDoesNotHoldTheCall(t *testing.T) {
	b, err := direct.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	defer func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}()
	var stdout slowCounter
	done := make(chan error, 1)
	go func() {
		_, err := b.Run(context.Background(), &sandbox.Spec{
			Command: []string{"/bin/sh", "-c", `setsid sh -c 'echo $$ > "$0"; exec yes' "$0" & while [ ! -s "$0" ]; do :; done`, pidFile},
			Stdout:  &stdout, Stderr: io.Discard,
			Limits: sandbox.Limits{Wall: 10 * time.Minute, OutputBytes: 1 << 40},
		})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(5 * time.Minute):
		t.Fatal("the call waits for a process outside its group that writes its output for ever")
	}
}
