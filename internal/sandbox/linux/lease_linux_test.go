package linux_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// TestLeaseOnHostFiles: a lease (fcntl F_SETLEASE) needs only a descriptor
// open for reading and a file owned by the caller's fsuid, which the
// sandbox's is for the host's own files (host root's under a root broker:
// /etc/ld.so.cache, /usr, a read-only grant). A write lease makes every
// open of the file on the host wait for it to break, up to
// fs.lease-break-time (45 s), and the sandbox may take it again at once: a
// lease on ld.so.cache stalls every dynamically linked program the host
// starts. A read lease does the same to the host's opens for writing. The
// sandbox must get no lease on any file it can see.
func TestLeaseOnHostFiles(t *testing.T) {
	needPython(t)
	d := newDirs(t)
	wfile, rlease := filepath.Join(d.W, "g"), filepath.Join(d.W, "h")
	for _, p := range []string{wfile, rlease} {
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Write leases on files the sandbox reads: the read-only grant's, the
	// host's system files, its own tree's; a read lease on its tree's.
	writeLeased := []string{filepath.Join(d.R, "f"), wfile}
	for _, p := range []string{"/etc/ld.so.cache", "/usr/bin/env"} {
		if _, err := os.Stat(p); err == nil {
			writeLeased = append(writeLeased, p)
		}
	}
	ready, done := filepath.Join(d.W, "ready"), filepath.Join(d.W, "done")
	script := `import fcntl, os, signal, sys, time
signal.signal(signal.SIGIO, signal.SIG_IGN)
held = []
def lease(p, kind, name):
    fd = os.open(p, os.O_RDONLY)
    try:
        fcntl.fcntl(fd, 1024, kind)
        print("lease", name, p, "HELD", flush=True)
        held.append(fd)
    except OSError as e:
        print("lease", name, p, "refused", e.errno, flush=True)
for p in sys.argv[3:]:
    lease(p, fcntl.F_WRLCK, "write")
lease(sys.argv[2], fcntl.F_RDLCK, "read")
open(sys.argv[1] + "/ready", "w").close()
end = time.time() + 20
while time.time() < end and not os.path.exists(sys.argv[1] + "/done"):
    time.sleep(0.05)
print("end", flush=True)
`
	type result struct {
		o   out
		err error
	}
	resc := make(chan result, 1)
	backend(t) // (made here: the goroutine must not fail the test)
	go func() {
		o, err := tryRun(t, &sandbox.Spec{Mounts: d.mounts(), Command: append([]string{"/usr/bin/python3", "-c", script, d.W, rlease}, writeLeased...)})
		resc <- result{o, err}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		select {
		case r := <-resc:
			t.Fatalf("the sandbox ended before it tried the leases: %v %q %q", r.err, r.o.stdout, r.o.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the sandbox never tried the leases")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The host's opens, while the sandbox still runs: with O_NONBLOCK an
	// open that must break a lease fails with EWOULDBLOCK instead of
	// waiting.
	hostOpen := func(p string, flags int) {
		t.Helper()
		start := time.Now()
		fd, err := unix.Open(p, flags|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		if errors.Is(err, unix.EWOULDBLOCK) {
			t.Errorf("the host's open of %s waits for the sandbox's lease on it to break (%v)", p, err)
		} else if err != nil {
			t.Errorf("the host's open of %s: %v", p, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("the host's open of %s took %v", p, d)
		}
	}
	for _, p := range writeLeased {
		hostOpen(p, unix.O_RDONLY)
	}
	hostOpen(rlease, unix.O_WRONLY)
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := <-resc
	if r.err != nil {
		t.Fatalf("Run: %v", r.err)
	}
	if !strings.Contains(r.o.stdout, "end") {
		t.Fatalf("the script did not finish: %q %q", r.o.stdout, r.o.stderr)
	}
	for _, line := range strings.Split(r.o.stdout, "\n") {
		if strings.HasSuffix(line, " HELD") {
			t.Errorf("the sandbox took a lease: %s", line)
		}
	}
	t.Logf("%s", r.o.stdout)
}
