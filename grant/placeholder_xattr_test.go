package grant_test

import (
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/wire"
)

// TestPlaceholderXattrIsWires: the mark the backends set (grant's) is the
// one the init and the tools look for (wire's).
func TestPlaceholderXattrIsWires(t *testing.T) {
	if grant.PlaceholderXattr != wire.PlaceholderXattr {
		t.Fatalf("airlock marks placeholders with %q, sandboxes look for %q", grant.PlaceholderXattr, wire.PlaceholderXattr)
	}
}
