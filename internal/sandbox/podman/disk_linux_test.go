package podman

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/testenv"
)

// smallDisk mounts a tmpfs of size at a new directory, a grant's file
// system small enough to fill.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount(testenv.FSSource, dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("mounting a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// TestLiveInitGuardsTheDisk: with the broker's disk guard not running (a
// broker stopped by job control polls nothing: airlock exec as a
// background job, stopped by SIGTTOU as it relayed its command's first
// line), the container's init stops a command that fills its grant's
// file system, as the native sandbox's init does. Before, the command
// filled a 64 MiB grant to its last byte.
func TestLiveInitGuardsTheDisk(t *testing.T) {
	b := newLive(t)
	hostDiskGuardOff.Store(true)
	defer hostDiskGuardOff.Store(false)
	dir := smallDisk(t, "64m")
	spec := baseSpec(dir)
	spec.Limits.Wall = 30 * time.Second
	out, res := sh(t, b, spec, `i=0; while [ $i -lt 100 ]; do head -c 1048576 /dev/zero > f$i 2>/dev/null; i=$((i+1)); done; echo wrote all; sleep 60`)
	if res.Limit != sandbox.LimitDisk || res.Signal != int(syscall.SIGKILL) || strings.Contains(out, "wrote all") {
		t.Fatalf("filling the grant's file system: limit %q, hits %v, exit %d, signal %d, output %q; want killed for the disk limit",
			res.Limit, res.LimitsHit, res.ExitCode, res.Signal, out)
	}
}

// TestLiveInitDeadlineIsTheTimeLimit: with the broker's timer not running
// (a broker stopped by job control), the container's init ends the call
// at its deadline, and the call is reported as killed for its time
// limit. Before, it was reported as a command killed by SIGKILL, with no
// limit hit.
func TestLiveInitDeadlineIsTheTimeLimit(t *testing.T) {
	b := newLive(t)
	hostDeadlineOff.Store(true)
	defer hostDeadlineOff.Store(false)
	spec := baseSpec(t.TempDir())
	spec.Limits.Wall = time.Second
	out, res := sh(t, b, spec, `sleep 60; echo slept`)
	if res.Limit != sandbox.LimitTime || res.Signal != int(syscall.SIGKILL) || strings.Contains(out, "slept") {
		t.Fatalf("sleeping past the time limit: limit %q, hits %v, exit %d, signal %d, output %q; want killed for the time limit",
			res.Limit, res.LimitsHit, res.ExitCode, res.Signal, out)
	}
}
