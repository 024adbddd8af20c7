package broker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// Each background log is capped, but a session keeps the log of every work
// it ever ran, in the records directory on the host's disk: a model that
// starts work after work, each writing up to the cap and ending, fills
// that disk (and with it every session's audit records) at the rate the
// disk writes. What a session keeps of its ended works' logs must not grow
// with the number of works: here 40 works write a full log each, and the
// session must keep at most a few logs' worth.
func TestBackgroundLogsOnDiskAreBoundedPerSession(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	const logCap, works = 64 << 10, 40
	s := f.open(t, sandboxtest.Unsandboxed(t), func(o *broker.Options) { o.BackgroundLogCap = logCap })
	var first string
	for i := range works {
		id := startWork(t, s, "head -c 65536 /dev/zero")
		if i == 0 {
			first = id
		}
		if w := workCall(t, s, "wait", id, `,"wait_secs":30`); w.Output.Meta.WorkState != broker.WorkExited {
			t.Fatalf("work %d: %q", i, w.Output.Content)
		}
	}
	var total int64
	dir := filepath.Join(s.Dir(), "background")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if fi, err := e.Info(); err == nil {
			total += fi.Size()
		}
	}
	if most := int64(8 * logCap); total > most {
		t.Errorf("after %d ended works of %d bytes of output each the session keeps %d bytes of logs in %s (%d files); want at most %d", works, logCap, total, dir, len(ents), most)
	}
	// The oldest work still answers, and says its log is gone rather
	// than point at a file that is not there.
	st := workCall(t, s, "status", first, "")
	c := st.Output.Content
	if st.Output.Meta.WorkState != broker.WorkExited || !strings.Contains(c, "output: 65536 bytes") {
		t.Errorf("status of the first work: %q", c)
	}
	info := workInfo(t, s, first)
	if _, err := os.Stat(info.LogPath); err != nil && strings.Contains(c, "full log: ") {
		t.Errorf("status of the first work points at its log, which is gone (%v): %q", err, c)
	}
}
