//go:build !cgo

package inside

import (
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

// A build without the constructor tells the host to place the init in its
// cgroups itself.
func TestNoEarlyJoinWithoutCgo(t *testing.T) {
	if initproto.InitJoins {
		t.Fatal("a build without the constructor says its init joins its cgroups")
	}
}
