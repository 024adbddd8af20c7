package linux_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

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
	held, release := holdSandboxes(t, n, script)
	defer release()
	total := 0
	for _, h := range held {
		total += h
	}
	if total == 0 {
		t.Fatalf("no sandbox made an inotify instance: %v", held)
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

// holdSandboxes starts n sandboxes at once, each running the Python
// script, which prints "held N" once it holds what it took and then reads
// its stdin to the end. It returns each sandbox's N once all have
// printed it; release ends them and waits for their Runs.
func holdSandboxes(t *testing.T, n int, script string) (held []int, release func()) {
	t.Helper()
	got := make(chan int, n)
	var wg sync.WaitGroup
	var stdins []*io.PipeWriter
	release = func() {
		for _, w := range stdins {
			w.Close()
		}
		wg.Wait()
	}
	for range n {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		stdins = append(stdins, inW)
		wg.Add(2)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(outR)
			n := -1
			for sc.Scan() {
				if v, ok := strings.CutPrefix(sc.Text(), "held "); ok && n < 0 {
					n, _ = strconv.Atoi(v)
					got <- n
				}
			}
			if n < 0 {
				got <- -1
			}
			io.Copy(io.Discard, outR)
		}()
		go func() {
			defer wg.Done()
			defer outW.Close()
			var se strings.Builder
			spec := &sandbox.Spec{Command: []string{"/usr/bin/python3", "-c", script}, Stdin: inR, Stdout: outW, Stderr: &se,
				Env:    []string{"PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8"},
				Limits: sandbox.Limits{Wall: 2 * time.Minute, AllowUnenforced: acceptUnenforced}}
			if _, err := backend(t).Run(context.Background(), spec); err != nil {
				t.Errorf("Run: %v", err)
			}
			if se.Len() > 0 {
				t.Logf("stderr: %s", se.String())
			}
		}()
	}
	deadline := time.After(90 * time.Second)
	for i := range n {
		select {
		case h := <-got:
			if h < 0 {
				release()
				t.Fatalf("a sandbox ended before it reported what it held")
			}
			held = append(held, h)
		case <-deadline:
			release()
			t.Fatalf("only %d of %d sandboxes reported what they held", i, n)
		}
	}
	return held, release
}

// TestSandboxesTogetherLeaveTheUserMessageQueues: sandboxes running at
// once take together at most half of the bytes of POSIX message queues
// the host user may have (RLIMIT_MSGQUEUE, charged to the user in every
// user namespace above the sandbox's too): fourteen sandboxes at 64 KiB
// apiece (a session may run sixteen background calls, for a day each)
// left the user's own processes not one queue of 8 KiB of its 800 KiB
// while they ran (red team). The child half is
// TestSandboxesTogetherLeaveTheUserMessageQueuesChild.
func TestSandboxesTogetherLeaveTheUserMessageQueues(t *testing.T) {
	needPython(t)
	runChildAs(t, countsUID, "TestSandboxesTogetherLeaveTheUserMessageQueuesChild")
}

// TestSandboxesTogetherLeaveTheUserMessageQueuesChild is the half of
// TestSandboxesTogetherLeaveTheUserMessageQueues that runs as countsUID.
func TestSandboxesTogetherLeaveTheUserMessageQueuesChild(t *testing.T) {
	if os.Getenv("AIRLOCK_UNPRIV_CHILD") != "1" {
		t.Skip("runs only as the child of TestSandboxesTogetherLeaveTheUserMessageQueues")
	}
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MSGQUEUE, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY || rl.Cur < 64<<10 {
		t.Skipf("RLIMIT_MSGQUEUE %+v (%v): no small bound to share", rl, err)
	}
	const msg = 8192 // the largest message a queue may take without privilege
	// Each sandbox makes queues of one message until its limit refuses
	// one. (The queue is made, and charged, before it is opened: where
	// Landlock refuses the open, the queue is there all the same.)
	script := `import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
class attr(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long), ("msgsize", ctypes.c_long), ("curmsgs", ctypes.c_long), ("pad", ctypes.c_long*4)]
n = 0
while n < 4096:
    a = attr(0, 1, ` + strconv.Itoa(msg) + `, 0)
    fd = libc.mq_open(b"/held%d" % n, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600, ctypes.byref(a))
    if fd < 0 and ctypes.get_errno() not in (13,):
        break
    n += 1
print("held", n, flush=True)
sys.stdin.read()
`
	n := int(rl.Cur/(64<<10)) + 2
	held, release := holdSandboxes(t, n, script)
	defer release()
	if slices.Max(held) == 0 {
		t.Fatalf("no sandbox made a queue: %v", held)
	}
	// The user's own processes must still have half of the bytes.
	name := func(i int) *byte {
		p, _ := unix.BytePtrFromString(fmt.Sprintf("airlock-test-%d-%d", os.Getpid(), i))
		return p
	}
	want := int(rl.Cur/2) / (msg + 256)
	made := 0
	var errno unix.Errno
	for ; made < want-2; made++ {
		a := [8]int64{0, 1, msg, 0}
		fd, _, e := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(name(made))), uintptr(unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_CLOEXEC), 0o600, uintptr(unsafe.Pointer(&a)), 0, 0)
		if e != 0 {
			errno = e
			break
		}
		unix.Close(int(fd))
	}
	for i := 0; i < made; i++ {
		unix.Syscall(unix.SYS_MQ_UNLINK, uintptr(unsafe.Pointer(name(i))), 0, 0)
	}
	if made < want-2 {
		t.Errorf("while %d sandboxes ran, the user could make %d queues of %d bytes (%v), want %d: half of its RLIMIT_MSGQUEUE (%d) kept from the sandboxes", n, made, msg, errno, want-2, rl.Cur)
	}
}
