package inside

import (
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

// The constructor of a cgo build recognises the init by the same argument
// the host starts it with.
func TestEarlyArgIsTheInitArg(t *testing.T) {
	if earlyArg != initproto.Arg {
		t.Fatalf("earlyArg %q, initproto.Arg %q", earlyArg, initproto.Arg)
	}
}

// Outside a sandbox's init the constructor does nothing.
func TestEarlyLockdownOnlyInTheInit(t *testing.T) {
	if done, _, err := earlyLockdown(); done || err != nil {
		t.Fatalf("earlyLockdown in a test process: done %v, err %v", done, err)
	}
}
