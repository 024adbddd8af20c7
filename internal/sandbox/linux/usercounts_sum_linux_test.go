package linux_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// countsUID is the host user TestSandboxesTogetherLeaveTheUserInotify
// runs its broker as: one of its own, so that the inotify instances its
// sandboxes take are no other user's (nor host root's, which the whole
// machine shares).
const countsUID = 61234

// TestSandboxesTogetherLeaveTheUserInotify: sandboxes running at once (a
// model's parallel calls) take together at most half of the host user's
// inotify instances, so the user's own processes (host root's, under a
// root broker: systemd, journald, every root daemon) can still make one.
// Each sandbox is bounded in its own user namespace, but the kernel
// charges every sandbox's instances to the broker's host user too: four
// sandboxes of 32 took all 128 of the user's, and inotify_init failed
// (EMFILE) for every process of that user while they ran (red team).
// The child half is TestSandboxesTogetherLeaveTheUserInotifyChild.
func TestSandboxesTogetherLeaveTheUserInotify(t *testing.T) {
	needPython(t)
	runChildAs(t, countsUID, "TestSandboxesTogetherLeaveTheUserInotifyChild")
}

// TestSandboxesTogetherLeaveTheUserInotifyChild is the half of
// TestSandboxesTogetherLeaveTheUserInotify that runs as countsUID.
func TestSandboxesTogetherLeaveTheUserInotifyChild(t *testing.T) {
	if os.Getenv("AIRLOCK_UNPRIV_CHILD") != "1" {
		t.Skip("runs only as the child of TestSandboxesTogetherLeaveTheUserInotify")
	}
	b, err := os.ReadFile("/proc/sys/user/max_inotify_instances")
	if err != nil {
		t.Skipf("no per-user inotify limit here: %v", err)
	}
	limit, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || limit < 2 {
		t.Skipf("max_inotify_instances %q", b)
	}
	// Enough sandboxes to take every instance at 32 apiece, and two more.
	n := limit/32 + 2
	script := `import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
n = 0
while n < 4096 and libc.inotify_init1(0) >= 0:
    n += 1
print("held", n, flush=True)
sys.stdin.read()
`
	held := make(chan int, n)
	var wg sync.WaitGroup
	var stdins []*io.PipeWriter
	defer func() {
		for _, w := range stdins {
			w.Close()
		}
		wg.Wait()
	}()
	for i := 0; i < n; i++ {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		stdins = append(stdins, inW)
		wg.Add(2)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(outR)
			got := -1
			for sc.Scan() {
				if v, ok := strings.CutPrefix(sc.Text(), "held "); ok {
					got, _ = strconv.Atoi(v)
					held <- got
				}
			}
			if got < 0 {
				held <- -1
			}
			io.Copy(io.Discard, outR)
		}()
		go func() {
			defer wg.Done()
			defer outW.Close()
			spec := &sandbox.Spec{Command: []string{"/usr/bin/python3", "-c", script}, Stdin: inR, Stdout: outW,
				Env:    []string{"PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8"},
				Limits: sandbox.Limits{Wall: 2 * time.Minute, AllowUnenforced: acceptUnenforced}}
			var se strings.Builder
			spec.Stderr = &se
			if _, err := backend(t).Run(context.Background(), spec); err != nil {
				t.Errorf("Run: %v", err)
			}
			if se.Len() > 0 {
				t.Logf("stderr: %s", se.String())
			}
		}()
	}
	total := 0
	deadline := time.After(90 * time.Second)
	for i := 0; i < n; i++ {
		select {
		case got := <-held:
			if got < 0 {
				t.Fatalf("a sandbox ended before it reported what it held")
			}
			total += got
		case <-deadline:
			t.Fatalf("only %d of %d sandboxes reported what they held", i, n)
		}
	}
	// Every sandbox holds what it took (their stdins are open): the user's
	// own processes must still have half of the instances.
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err == nil {
		unix.Close(fd)
	}
	if total > limit/2 || err != nil {
		t.Errorf("%d sandboxes at once hold %d of the user's %d inotify instances, and the user's own inotify_init1 gave %v: want at most half held by sandboxes", n, total, limit, err)
	}
}
