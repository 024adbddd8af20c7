package broker_test

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandbox/diskguard"
	"github.com/airlockhq/airlock/internal/sandboxtest"
	"github.com/airlockhq/airlock/internal/testenv"
)

// Background logs are written to the host's records directory, where no
// grant's disk guard looks: each is capped, but a model that starts work
// after work, each printing as much as its output limit lets it, must not
// fill that file system, or the session's audit records (on the same file
// system) can no longer be written. Logging stops at the file system's
// floor of free space, as the disk guard keeps a grant's, and later
// calls are still recorded.
func TestBackgroundLogsLeaveTheRecordsDiskItsFloor(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small file system for the records (CI runs as root)")
	}
	dir := t.TempDir()
	if err := unix.Mount(testenv.FSSource, dir, "tmpfs", 0, "size=64m"); err != nil {
		t.Skipf("mounting a tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	f := newFixture(t, grant.Limits{})
	f.records = dir
	s := f.open(t, sandboxtest.Native(t), nil)

	// Each work prints 16 MiB, within its output limit (8x the call's
	// 1 MiB, on each stream); six of them are more than the file system.
	for i := range 6 {
		b, _ := json.Marshal(map[string]any{"command": "head -c 8000000 /dev/zero; head -c 8000000 /dev/zero >&2", "run_in_background": true})
		res := call(t, s, "shell", string(b))
		id := res.Output.Meta.WorkID
		if id == "" {
			t.Fatalf("start %d: %s %q", i, res.Class, res.Output.Content)
		}
		deadline := time.Now().Add(60 * time.Second)
		for workInfo(t, s, id).State == broker.WorkRunning && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	avail, size := int64(st.Bavail)*st.Bsize, int64(st.Blocks)*st.Bsize
	if floor := diskguard.Floor(size, 0); avail < floor-(1<<20) {
		t.Errorf("background logs left %d bytes free on the records' file system of %d, below its floor of %d", avail, size, floor)
	}
	full := 0
	for _, w := range s.Background() {
		if w.LogFull {
			full++
		}
	}
	if full == 0 {
		t.Errorf("no work's status says its log stopped for the disk: %+v", s.Background())
	}
	res, err := s.Call(t.Context(), "read_file", json.RawMessage(`{"path":"hello.txt"}`))
	if err != nil || res.Class != broker.ClassOK {
		t.Errorf("a call after the logs: %v, %+v", err, res)
	}
}
