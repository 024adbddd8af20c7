//go:build unix

package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/wasm/wasmtest"
	"golang.org/x/sys/unix"
)

// TestRunCapsuleOpeningItsOwnFIFO is the red team's capsule: it makes a
// FIFO with its own shell call and opens it. The open was a blocking
// open(2) in airlock run's own process, which the 5 s time limit could not
// interrupt, nor SIGTERM: the run was alive hours later. Now the open
// fails at once (EACCES) and the run ends.
func TestRunCapsuleOpeningItsOwnFIFO(t *testing.T) {
	runEnv(t)
	ws := t.TempDir()
	mod := wasmtest.Build(t, probePkg)
	code, stdout, stderr := runCLI(t, ws, "run", "--unsandboxed", "--time", "5s", mod, "--", "tool", "shell", `{"command":"mkfifo p"}`)
	fifo := filepath.Join(ws, "p")
	if fi, err := os.Lstat(fifo); code != 0 || err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the capsule's mkfifo: exit %d %v\n%s\n%s", code, err, stdout, stderr)
	}

	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	t.Chdir(ws)
	go func() {
		done <- Main(context.Background(), []string{"run", "--unsandboxed", "--time", "5s", mod, "--", "read", "p"}, strings.NewReader(""), &out, &errOut)
	}()
	select {
	case code = <-done:
	case <-time.After(2 * time.Minute):
		t.Errorf("airlock run did not end: its open of the FIFO waits for a writer")
		// Open the FIFO's other end, which completes the waiting open,
		// until the run ends.
		giveUp := time.After(time.Minute)
		for code = -1; code == -1; {
			if fd, err := unix.Open(fifo, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
				unix.Close(fd)
			}
			select {
			case code = <-done:
			case <-giveUp:
				t.Fatal("airlock run still waits after the FIFO was opened")
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	if code != 0 || !strings.Contains(out.String(), "Permission denied") {
		t.Errorf("reading the FIFO: exit %d, stdout %q, stderr %q; want the open refused", code, out.String(), errOut.String())
	}
}
