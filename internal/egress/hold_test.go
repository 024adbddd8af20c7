package egress_test

import (
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/egress"
)

// TestHoldRefusesEveryConnection: while Hold returns an error (the
// broker's audit records cannot be written) a granted host is refused,
// with that reason and before anything is dialled; once it returns nil,
// the same host is reached.
func TestHoldRefusesEveryConnection(t *testing.T) {
	echoPort, accepts := tcpServer(t, tcpEcho)
	var held atomic.Bool
	held.Store(true)
	decisions := make(chan egress.Decision, 8)
	fwd := stack(t, &egress.Options{
		Sandbox:    "hold",
		Policy:     loopbackPolicy{port: echoPort},
		Resolver:   fixtureResolver{},
		OnDecision: func(d egress.Decision) { decisions <- d },
		Hold: func() error {
			if held.Load() {
				return errors.New("writing audit log: no space left on device")
			}
			return nil
		},
	})
	connect := func() byte {
		c, err := net.Dial("tcp", fwd)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		return socksConnect(t, c, "fixture.test", echoPort)
	}
	if rep := connect(); rep == 0 {
		t.Fatal("a connection went through while egress was held")
	}
	if d := <-decisions; d.Allowed || !strings.Contains(d.Reason, "egress is held: writing audit log") {
		t.Errorf("decision while held: %+v", d)
	}
	if n := accepts.Load(); n != 0 {
		t.Errorf("the granted host saw %d connections while egress was held", n)
	}
	held.Store(false)
	if rep := connect(); rep != 0 {
		t.Fatalf("REP %#x once the hold was lifted", rep)
	}
	if d := <-decisions; !d.Allowed {
		t.Errorf("decision once lifted: %+v", d)
	}
}
