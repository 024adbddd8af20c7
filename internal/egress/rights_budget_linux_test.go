package egress_test

import (
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/egress/forward"
)

// openFDs counts the descriptors this process holds.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// The proxy's descriptors are the broker's, shared by every sandbox's proxy
// and every call the broker runs; a sandbox's own are capped by its
// RLIMIT_NOFILE (1024 by default). A sandbox that dials the proxy's socket
// on each of its connections (64) and sends a message carrying the most
// descriptors one may (253, copies of a few sockets of its own) made the
// broker hold 64×253, over 16,000 at once, while it closed them: two such
// sandboxes took a broker whose limit is 20,000 to EMFILE, where every
// other sandbox's proxy fails to dial and every call fails to start. The
// descriptors the proxy holds at once on one sandbox's behalf must stay
// within what the sandbox may hold itself.
func TestDescriptorsReceivedAtOnceAreBounded(t *testing.T) {
	const conns, perMessage, budget = 64, 253, 1024
	sock, decisions, serve, stop := proxyListening(t, egress.Options{
		Policy: loopbackPolicy{}, Resolver: fixtureResolver{},
		MaxConns: conns,
	})
	us := make([]*net.UnixConn, conns)
	for i := range us {
		u, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { u.Close() })
		us[i] = u
	}
	// Each message starts with a socket whose last close waits (its FIN
	// sits behind bytes its peer never reads), so that the proxy holds the
	// rest of the message while it closes it. The test's own reference is
	// closed while the message is queued and the proxy not yet serving:
	// had the proxy read and closed its copy first, the test's close was
	// the last, and waited for ever (the test hung, one run in four on a
	// loaded machine).
	first := make([]int, conns)
	for i := range first {
		first[i], _ = lingeringPair(t)
	}
	plain, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(plain)

	base := openFDs(t)
	var peak int
	var mu sync.Mutex
	done := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			n := openFDs(t)
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
	for i, u := range us {
		fds := []int{first[i]}
		for len(fds) < perMessage {
			fds = append(fds, plain)
		}
		if _, _, err := u.WriteMsgUnix([]byte{forward.Handoff}, syscall.UnixRights(fds...), nil); err != nil {
			t.Fatalf("sending %d descriptors: %v", len(fds), err)
		}
		syscall.Close(first[i]) // the message holds the last reference
	}
	serve()
	for range conns {
		select {
		case <-decisions:
		case <-time.After(30 * time.Second):
			t.Fatal("a refusal of a message with descriptors was not reported")
		}
	}
	close(done)
	<-watched
	stop()
	if held := peak - base; held > budget {
		t.Fatalf("the proxy held %d descriptors at once for one sandbox's %d connections; want at most %d", held, conns, budget)
	}
	t.Logf("peak %d over a base of %d", peak-base, base)
}
