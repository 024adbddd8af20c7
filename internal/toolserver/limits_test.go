package toolserver_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/wire"
)

// TestHandsGrantCapsCommands: a command (airlock exec, background work)
// runs within the hands' grant as a tool call does: the broker asking for
// an hour and a gigabyte of output gets the hands' second and 4 KiB.
func TestHandsGrantCapsCommands(t *testing.T) {
	w := newWorkspace(t)
	hands, err := grant.Parse([]byte(`[paths]
read_write = ["`+w.root+`"]
[limits]
time = "1s"
output = "4KiB"
`), "hands.toml", w.root)
	if err != nil {
		t.Fatal(err)
	}
	_, url := serveGrant(t, hands)
	b := remote(t, url, nil)
	for _, tc := range []struct {
		name, command string
		limit         wire.Limit
	}{
		{"time", "sleep 30; echo slept", wire.LimitTime},
		{"output", "head -c 100000 /dev/zero | tr '\\0' x; sleep 30", wire.LimitOutput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := broker.SpecFor(w.grant, w.grant.LimitsFor("shell"))
			spec.Command = []string{"/bin/sh", "-c", tc.command}
			spec.Limits.Wall = time.Hour
			spec.Limits.OutputBytes = 1 << 30
			var stdout bytes.Buffer
			spec.Stdout = &stdout
			res, err := b.Run(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			if res.Limit != tc.limit {
				t.Errorf("ended by limit %q (exit %d), want %q: the broker's limits overrode the hands' grant", res.Limit, res.ExitCode, tc.limit)
			}
			if stdout.Len() > 4<<10 {
				t.Errorf("%d bytes of output reached the broker, past the hands' 4 KiB", stdout.Len())
			}
			if strings.Contains(stdout.String(), "slept") {
				t.Errorf("the command outlived the hands' 1 s")
			}
		})
	}
}
