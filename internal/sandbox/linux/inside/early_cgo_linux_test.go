//go:build cgo

package inside

import (
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

// The constructor joins the cgroups through the protocol's own variable
// and descriptors.
func TestEarlyJoinIsTheProtocols(t *testing.T) {
	if earlyJoinEnv != initproto.JoinEnv || earlyJoinMemoryFD != initproto.JoinFD || earlyJoinPidsFD != initproto.InitTasksFD {
		t.Fatalf("the constructor joins through %s, fds %d and %d; the protocol says %s, fds %d and %d",
			earlyJoinEnv, earlyJoinMemoryFD, earlyJoinPidsFD, initproto.JoinEnv, initproto.JoinFD, initproto.InitTasksFD)
	}
	if asked, err := earlyJoin(); asked || err != nil {
		t.Fatalf("earlyJoin in a test process: asked %v, err %v", asked, err)
	}
}
