package toolserver

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/egress"
)

// TestResultCacheCountsEgressDecisions: the record of tool calls' results
// stays within its byte bound whatever the results hold. A call's egress
// decisions (up to maxDecisions of them, each naming the host its sandbox
// asked for) were not counted, so results of sandboxes that tried many
// hosts were kept by the thousand, each up to a thousand decisions: a few
// hundred MiB on the hands past the record's 64 MiB.
func TestResultCacheCountsEgressDecisions(t *testing.T) {
	const maxBytes = 1 << 20
	c := newResultCache(1024, maxBytes)
	for i := range 100 {
		var res Result
		for j := range maxDecisions {
			res.Egress = append(res.Egress, egress.Decision{Host: fmt.Sprintf("%d-%d.%s.test", i, j, strings.Repeat("h", 200)), Reason: "not granted"})
		}
		id := fmt.Sprintf("call_%d", i)
		c.do(context.Background(), id, sha256.Sum256([]byte(id)), func() (*Result, bool) { return &res, true })
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	held := 0
	for _, e := range c.entries {
		for _, d := range e.res.Egress {
			held += len(d.Host)
		}
	}
	if held > maxBytes {
		t.Errorf("the record holds %d results whose egress decisions name %d bytes of hosts, past its bound of %d bytes", len(c.entries), held, maxBytes)
	}
}
