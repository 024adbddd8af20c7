package broker_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// A payload can dial its proxy's socket and send it descriptors of its
// own. Each child here sends two ends of one loopback TCP connection, x
// (SO_LINGER set for ever, its FIN behind bytes y never reads) and y,
// then exits, so the proxy's copies may be the last: refused, they are
// closed x first, and a plain close(2) of x would wait for y, which the
// same thread closes only after it — holding a broker thread, the
// proxy's Serve and so the call past its time limit, for good. The call
// must end as any other does.
func TestEgressLingeringDescriptorsEndWithTheCall(t *testing.T) {
	w := newEgressWorld(t, sandboxtest.Native(t))
	payload := `python3 -c '
import array, errno, os, socket, struct, time
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
for _ in range(20):
    pid = os.fork()
    if pid == 0:
        x, y = lingering()
        u = socket.socket(socket.AF_UNIX); u.connect("/run/airlock/proxy.sock")
        while True:
            try:
                u.sendmsg([b"\0"], [(S, socket.SCM_RIGHTS, array.array("i", [x.fileno(), y.fileno()]))])
                break
            except OSError as e:
                # The kernel counts descriptors in flight per host user:
                # another test of the machine may hold many for a while.
                if e.errno != errno.ETOOMANYREFS: raise
                time.sleep(0.05)
        os._exit(0)
    os.waitpid(pid, 0)
print("sent")
'`
	b, _ := json.Marshal(map[string]any{"command": payload, "timeout": 30})
	type outcome struct {
		res *broker.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := w.s.Call(context.Background(), "shell", json.RawMessage(b))
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		if o.err != nil {
			t.Fatal(o.err)
		}
		if !strings.Contains(o.res.Output.Content, "sent\n") {
			t.Errorf("class %s, output %q lacks the payload's end", o.res.Class, o.res.Output.Content)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("the call did not return within 90s: the proxy is stuck closing a descriptor the sandbox sent")
	}
}
