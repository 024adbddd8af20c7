package sandbox

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

// failingWriter fails every write, as a pipe whose reader went away does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.EPIPE }

// TestCopyCappedPassesABrokenPipeBack: when the destination fails, the
// source is closed, so the process writing into it gets EPIPE (and, by
// default, SIGPIPE) as it would writing to the destination itself. (The
// source used to be drained into nothing: `yes` behind airlock exec ran on
// after its reader left, until its time limit.)
func TestCopyCappedPassesABrokenPipeBack(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	wrote := make(chan error, 1)
	go func() {
		defer w.Close()
		buf := make([]byte, 64<<10)
		for range 1024 { // 64 MiB: far more than a pipe holds
			if _, err := w.Write(buf); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	_, _, err = CopyCapped(failingWriter{}, r, 1<<40, nil)
	if !errors.Is(err, syscall.EPIPE) {
		t.Errorf("CopyCapped: %v, want the writer's EPIPE", err)
	}
	if err := <-wrote; !errors.Is(err, syscall.EPIPE) {
		t.Errorf("the process writing into the source got %v, want EPIPE", err)
	}
}
