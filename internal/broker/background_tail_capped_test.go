package broker_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// TestBackgroundStatusKeepsTheOutputLimit: what background_command answers
// is tool output the model reads, so it is held to the grant's output limit
// as a foreground shell call's is. The tail it shows was 16 KiB whatever the
// limit, more once its bytes are shown (a byte that is not UTF-8 as \xNN)
// and JSON-escaped (a control character as \u00XX): under a 4 KiB limit a
// work printing control characters or binary had 96 KiB and 80 KiB of it
// read by the model on each status.
func TestBackgroundStatusKeepsTheOutputLimit(t *testing.T) {
	const limit = 4 << 10
	f := newFixture(t, grant.Limits{Output: limit})
	s := f.open(t, sandboxtest.Native(t), nil)
	for name, command := range map[string]string{
		"control":  `head -c 20000 /dev/zero | tr '\0' '\1'`,
		"not-utf8": `head -c 20000 /dev/zero | tr '\0' '\377'`,
		"text":     `head -c 20000 /dev/zero | tr '\0' a`,
	} {
		t.Run(name, func(t *testing.T) {
			id := startWork(t, s, command)
			for _, op := range []string{"wait", "status"} {
				res := workCall(t, s, op, id, "")
				out := res.Output
				// The label's header is airlock's, not the work's output.
				_, body, _ := strings.Cut(out.Content, "\n")
				enc, _ := json.Marshal(body)
				if len(enc) > limit {
					t.Errorf("%s: the answer costs %d bytes of JSON (%d as text) under an output limit of %d", op, len(enc), len(body), limit)
				}
				tail := lastOutput(out.Content)
				if tail == "" || !out.Truncated || out.Meta.Bytes != 20000 {
					t.Errorf("%s: no tail, or not marked truncated: meta %+v truncated %v, tail %q", op, out.Meta, out.Truncated, tail)
				}
			}
		})
	}
}
