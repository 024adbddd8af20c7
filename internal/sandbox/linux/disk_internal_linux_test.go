package linux

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/testenv"
)

// smallDisk mounts a tmpfs of size bytes on a new directory and returns
// it, or skips the test where this process may not mount.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small file system (CI runs as root)")
	}
	dir := t.TempDir()
	if err := unix.Mount(testenv.FSSource, dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("mounting a tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

func diskBackend(t *testing.T, floor int64) *Backend {
	t.Helper()
	b, err := New(&Options{Executable: os.Args[0], Cgroups: CgroupsOptional, DiskFloor: floor})
	if err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func diskRun(t *testing.T, b *Backend, dir, script string) (*sandbox.Result, string) {
	t.Helper()
	var out bytes.Buffer
	res, err := b.Run(context.Background(), &sandbox.Spec{
		Command: []string{"/bin/sh", "-c", script},
		Env:     []string{"PATH=/usr/bin:/bin"},
		Mounts:  []sandbox.Mount{{Source: dir, Writable: true}},
		Cwd:     dir,
		Limits:  sandbox.Limits{Wall: 15 * time.Second, MemoryBytes: 512 << 20, AllowUnenforced: true},
		Stdout:  &out, Stderr: &out,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res, out.String()
}

// TestDiskGuardStopsAFill (hostile case 13): a call that writes file
// after file, each within RLIMIT_FSIZE, into a writable grant is killed
// once the grant's file system is below its floor, and the result names
// the disk limit.
func TestDiskGuardStopsAFill(t *testing.T) {
	dir := smallDisk(t, "64m")
	b := diskBackend(t, 32<<20)
	res, out := diskRun(t, b, dir, `i=0; while [ $i -lt 100 ]; do head -c 1048576 /dev/zero > f$i 2>/dev/null; i=$((i+1)); done; echo wrote all; sleep 60`)
	if res.Limit != sandbox.LimitDisk || !slices.Contains(res.LimitsHit, sandbox.LimitDisk) || res.Signal != int(unix.SIGKILL) {
		t.Fatalf("filling the grant's file system: limit %q, hits %v, exit %d, signal %d, output %q; want killed for the disk limit",
			res.Limit, res.LimitsHit, res.ExitCode, res.Signal, out)
	}
}

// TestDiskGuardLeavesANearlyFullDiskAlone: a file system already below
// its floor stops no call that does not use it up further; one that
// writes to it is stopped.
func TestDiskGuardLeavesANearlyFullDiskAlone(t *testing.T) {
	dir := smallDisk(t, "16m")
	b := diskBackend(t, 64<<20) // more than the whole file system
	res, out := diskRun(t, b, dir, `sleep 0.3; echo read only`)
	if res.ExitCode != 0 || res.Limit != "" || !strings.Contains(out, "read only") {
		t.Fatalf("a call that writes nothing: limit %q, exit %d, signal %d, output %q; want it to finish", res.Limit, res.ExitCode, res.Signal, out)
	}
	res, out = diskRun(t, b, dir, `head -c 4194304 /dev/zero > f; sleep 60`)
	if res.Limit != sandbox.LimitDisk {
		t.Fatalf("a call that writes 4 MiB below the floor: limit %q, exit %d, signal %d, output %q; want the disk limit", res.Limit, res.ExitCode, res.Signal, out)
	}
}

// TestDiskGuardStopsAnInodeFill: empty files use no space but inodes,
// which a file system runs out of too; a call that uses them up is
// stopped at the inode floor.
func TestDiskGuardStopsAnInodeFill(t *testing.T) {
	dir := smallDisk(t, "64m,nr_inodes=20000")
	b := diskBackend(t, 0)
	res, out := diskRun(t, b, dir, `seq 1 19500 | xargs touch 2>/dev/null; echo made all; sleep 60`)
	if res.Limit != sandbox.LimitDisk || res.Signal != int(unix.SIGKILL) {
		t.Fatalf("using up the grant's inodes: limit %q, hits %v, exit %d, signal %d, output %q; want killed for the disk limit",
			res.Limit, res.LimitsHit, res.ExitCode, res.Signal, out)
	}
}

// TestInitGuardsTheDiskToo: with the host's disk guard not running (a
// broker stopped by job control runs none: airlock exec as a background
// job, stopped by SIGTTOU as it relayed its command's first line, let the
// command fill a 64 MiB grant to its last byte), the init's own guard
// stops a call that fills its grant's file system, cold and warm.
func TestInitGuardsTheDiskToo(t *testing.T) {
	hostDiskGuardOff.Store(true)
	defer hostDiskGuardOff.Store(false)
	fill := `i=0; while [ $i -lt 100 ]; do head -c 1048576 /dev/zero > f$i 2>/dev/null; i=$((i+1)); done; echo wrote all; sleep 60`
	t.Run("cold", func(t *testing.T) {
		dir := smallDisk(t, "64m")
		res, out := diskRun(t, diskBackend(t, 32<<20), dir, fill)
		if res.Limit != sandbox.LimitDisk || res.Signal != int(unix.SIGKILL) || strings.Contains(out, "wrote all") {
			t.Fatalf("filling the grant's file system: limit %q, hits %v, exit %d, signal %d, output %q; want killed for the disk limit",
				res.Limit, res.LimitsHit, res.ExitCode, res.Signal, out)
		}
	})
	t.Run("warm", func(t *testing.T) {
		dir := smallDisk(t, "64m")
		b, err := New(&Options{Executable: os.Args[0], Cgroups: CgroupsOptional, DiskFloor: 32 << 20, PoolSize: 1})
		if err != nil {
			t.Skipf("no sandbox here: %v", err)
		}
		t.Cleanup(func() { b.Close() })
		spec := &sandbox.Spec{
			Env:    []string{"PATH=/usr/bin:/bin"},
			Mounts: []sandbox.Mount{{Source: dir, Writable: true}},
			Cwd:    dir,
			Limits: sandbox.Limits{Wall: 15 * time.Second, MemoryBytes: 512 << 20, AllowUnenforced: true},
		}
		if err := b.Prewarm(spec); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(20 * time.Second); b.Warm(spec) < 1; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("no warm sandbox after 20s")
			}
		}
		var out bytes.Buffer
		s := *spec
		s.Stdin, s.Stdout, s.Stderr = strings.NewReader("sh:"+fill), &out, &out
		res, err := b.Run(context.Background(), &s)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(res.Isolation.Features, "warm") {
			t.Fatalf("the call was not warm: %v", res.Isolation.Features)
		}
		if res.Limit != sandbox.LimitDisk || strings.Contains(out.String(), "wrote all") {
			t.Fatalf("filling the grant's file system: limit %q, hits %v, exit %d, signal %d, output %q; want killed for the disk limit",
				res.Limit, res.LimitsHit, res.ExitCode, res.Signal, out.String())
		}
	})
}
