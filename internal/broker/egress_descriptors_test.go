package broker_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// The broker's descriptors are shared by every sandbox's proxy and every
// call it runs; a sandbox's own are capped by its RLIMIT_NOFILE (1024 by
// default). A payload that dials its proxy's socket 64 times and sends on
// each a message of 253 descriptors (copies of one socket, after one whose
// close waits) made the broker hold over 16,000 at once, enough for two
// such sandboxes to take a broker whose limit is 20,000 to EMFILE. The
// broker must hold no more at once for the sandbox than the sandbox may
// hold itself.
func TestEgressDescriptorsSentAreBoundedInTheBroker(t *testing.T) {
	const budget = 1024
	w := newEgressWorld(t, sandboxtest.Native(t))
	payload := `python3 -c '
import array, errno, socket, struct, time
S = socket.SOL_SOCKET
def lingering():
    l = socket.socket(); l.setsockopt(S, socket.SO_RCVBUF, 1); l.bind(("127.0.0.1", 0)); l.listen(1)
    x = socket.socket(); x.setsockopt(S, socket.SO_SNDBUF, 1); x.connect(l.getsockname())
    y, _ = l.accept(); l.close(); x.setblocking(False)
    for _ in range(3):
        try:
            while True: x.send(bytes(65536))
        except BlockingIOError: pass
        time.sleep(0.02)
    x.setsockopt(S, socket.SO_LINGER, struct.pack("ii", 1, 1 << 30))
    return x, y
pairs = [lingering() for _ in range(64)]
plain = socket.socket(socket.AF_UNIX)
us = []
for _ in range(64):
    u = socket.socket(socket.AF_UNIX); u.connect("/run/airlock/proxy.sock"); us.append(u)
time.sleep(0.5)
for (x, y), u in zip(pairs, us):
    fds = array.array("i", [x.fileno()] + [plain.fileno()] * 252)
    while True:
        try:
            u.sendmsg([b"\0"], [(S, socket.SCM_RIGHTS, fds)]); break
        except OSError as e:
            if e.errno != errno.ETOOMANYREFS: raise
            time.sleep(0.001)
    x.close()
for u in us:
    u.recv(1)
print("sent")
'`
	b, _ := json.Marshal(map[string]any{"command": payload, "timeout": 60})
	count := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	base := count()
	var mu sync.Mutex
	peak := base
	done := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			n := count()
			mu.Lock()
			peak = max(peak, n)
			mu.Unlock()
			select {
			case <-done:
				return
			default:
			}
		}
	}()
	res, err := w.s.Call(context.Background(), "shell", json.RawMessage(b))
	close(done)
	<-watched
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Output.Content, "sent\n") {
		t.Fatalf("class %s, output %q lacks the payload's end", res.Class, res.Output.Content)
	}
	if held := peak - base; held > budget {
		t.Fatalf("the broker held %d more descriptors at once for one sandbox's messages; want at most %d", held, budget)
	}
	t.Logf("peak %d over a base of %d", peak-base, base)
}
