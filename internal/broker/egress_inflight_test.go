package broker_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// The kernel counts descriptors in flight on Unix sockets (sent with
// SCM_RIGHTS, not yet received) per host user, and refuses a sender
// without capabilities once the count passes its RLIMIT_NOFILE
// (ETOOMANYREFS): every sandbox of the broker's user shares that count.
// One sandbox holding more than its share must not cut another off its
// network: the other's forwarder, which hands each connection to the
// proxy as a descriptor, still gets its client through.
func TestEgressWorksBesideASandboxHoldingDescriptorsInFlight(t *testing.T) {
	w := newEgressWorld(t, sandboxtest.Native(t))
	hold := `python3 -c '
import socket, array, time
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
fds = array.array("i", [b.fileno()] * 250)
n = 0
try:
    while n < 100000:
        a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
        n += 250
except OSError as e:
    print("in flight", n, e, flush=True)
open("held", "w").write(str(n))
time.sleep(600)
'`
	b, _ := json.Marshal(map[string]any{"command": hold, "run_in_background": true})
	res := call(t, w.s, "shell", string(b))
	id := res.Output.Meta.WorkID
	if id == "" {
		t.Fatalf("the holder did not start: %s %q", res.Class, res.Output.Content)
	}
	t.Cleanup(func() { call(t, w.s, "background_command", `{"operation":"stop","work_id":"`+id+`"}`) })

	cmd := `while [ ! -s held ]; do sleep 0.1; done; echo "held $(cat held)"; curl -sS --max-time 20 --cacert "$SSL_CERT_FILE" ` + w.a.URL("/ok")
	b, _ = json.Marshal(map[string]string{"command": cmd})
	res = call(t, w.s, "shell", string(b))
	if !strings.Contains(res.Output.Content, "held ") {
		t.Fatalf("the holder never held its descriptors: %s %q", res.Class, res.Output.Content)
	}
	if !strings.Contains(res.Output.Content, "hello from a.test\n") {
		t.Errorf("another sandbox's descriptors in flight cut this one's network: class %s, output %q", res.Class, res.Output.Content)
	}
}
