package podman

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// signalWriter collects what is written and closes seen once it holds want.
type signalWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestLiveEnvironmentOnNoCommandLine: the Spec's environment (a variable
// airlock exec --inherit-env took from the user, a token) reaches the
// container, and no process's command line on the host holds it while
// the container runs. It was Podman's --env K=V: /proc/PID/cmdline of
// the podman client, for the whole call, which every local user can read
// (ps -ef), where the native backend hands the environment over a pipe.
func TestLiveEnvironmentOnNoCommandLine(t *testing.T) {
	b := newLive(t)
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	value := "tok-" + hex.EncodeToString(secret)
	spec := baseSpec(t.TempDir())
	spec.Env = append(spec.Env, "AIRLOCK_TEST_TOKEN="+value, "MULTI=a\nb=c")
	spec.Command = []string{"/bin/sh", "-c", `echo ready; read x; echo "got=$AIRLOCK_TEST_TOKEN"; echo "b=${b-unset} multi=$MULTI"`}
	stdinR, stdinW := io.Pipe()
	out := &signalWriter{want: "ready", seen: make(chan struct{})}
	spec.Stdin, spec.Stdout, spec.Stderr = stdinR, out, out
	type result struct {
		res *sandbox.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := b.Run(context.Background(), spec)
		done <- result{res, err}
	}()
	select {
	case <-out.seen:
	case r := <-done:
		t.Fatalf("the command ended before it was ready: %+v %v %q", r.res, r.err, out.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("the container did not start: %q", out.String())
	}
	// While the container runs: every process's command line on the host.
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range cmdlines {
		data, err := os.ReadFile(p)
		if err == nil && bytes.Contains(data, []byte(value)) {
			t.Errorf("%s holds the environment's value: %q", p, bytes.ReplaceAll(data, []byte{0}, []byte{' '}))
		}
	}
	stdinW.Close()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := out.String(); !strings.Contains(got, "got="+value+"\n") || !strings.HasSuffix(got, "b=unset multi=a\nb=c\n") {
		t.Errorf("the container's environment: %q (exit %d); want the token, and MULTI's value a single variable", got, r.res.ExitCode)
	}
}
