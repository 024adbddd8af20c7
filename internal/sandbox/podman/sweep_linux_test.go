package podman

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/procid"
)

type testLog struct{ t *testing.T }

func (l testLog) Debug(msg string, args ...any) { l.t.Log(append([]any{msg}, args...)...) }

// TestSweepStagesAfterPIDReuse: a broker killed with SIGKILL leaves its
// staging directory, with the user's trees still mounted in it; the next
// start unmounts and removes it once its broker is gone. The broker was
// judged by its pid alone, so once the pid was reused (here: by PID 1,
// alive and no broker) the staged mounts stayed for good. A staging
// directory is named for its broker's pid and start time, as the
// containers' labels are.
func TestSweepStagesAfterPIDReuse(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount")
	}
	parent := t.TempDir()
	// A dead broker's stage, whose pid another process has now: pid 1's
	// own, with another start time.
	dead := procid.ID("1-1")
	if procid.Of(1) == dead {
		t.Skip("pid 1 started at tick 1")
	}
	dir, err := os.MkdirTemp(parent, stageName(dead))
	if err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(dir, "1")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) })
	// A live broker's stage (this process's) stays.
	live, err := os.MkdirTemp(parent, stageName(procid.Self()))
	if err != nil {
		t.Fatal(err)
	}
	sweepStages(parent, testLog{t})
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), " "+mnt+" ") {
		t.Errorf("the dead broker's staged mount %s remains after the sweep", mnt)
	}
	if _, err := os.Lstat(dir); err == nil {
		t.Errorf("the dead broker's staging directory %s remains", dir)
	}
	if _, err := os.Lstat(live); err != nil {
		t.Errorf("the live broker's staging directory was removed: %v", err)
	}
}
