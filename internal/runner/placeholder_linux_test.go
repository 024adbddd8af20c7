package runner

import (
	"testing"

	"github.com/airlockhq/airlock/grant"
)

// The runner names the placeholders' mark itself (it imports only wire
// and tool): it must be the one airlock writes.
func TestPlaceholderXattrIsGrants(t *testing.T) {
	if placeholderXattr != grant.PlaceholderXattr {
		t.Fatalf("runner reads %q, airlock marks placeholders with %q", placeholderXattr, grant.PlaceholderXattr)
	}
}
