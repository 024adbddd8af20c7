package linux_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
)

// TestLockdownAtSpawn: the init built without cgo, as the README installs
// it, has no constructor; the spawner locks it down before its exec (the
// securebits, the bounding set, no_new_privs, the cgroups joined), the
// init finds it so and makes no all-threads call for them, and the
// payload still has no capability in any set, the ambient one the
// spawner carried the init's capabilities through the exec in included.
// Without the spawner (a build of this package without cgo) the init
// does all of it itself, to the same end.
func TestLockdownAtSpawn(t *testing.T) {
	var log linux.SyncBuffer
	b, err := linux.New(&linux.Options{Executable: separateInitExe(t), Cgroups: linux.CgroupsOptional,
		Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	var so, se bytes.Buffer
	res, err := b.Run(context.Background(), &sandbox.Spec{
		Command: []string{"/bin/sh", "-c", "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status"},
		Env:     []string{"PATH=/usr/bin:/bin"}, Stdout: &so, Stderr: &se,
		Limits: sandbox.Limits{Wall: 30 * time.Second, AllowUnenforced: acceptUnenforced}})
	if err != nil {
		t.Fatalf("Run: %v (stderr %q)", err, se.String())
	}
	if res.ExitCode != 0 {
		t.Fatalf("exit %d, stderr %q", res.ExitCode, se.String())
	}
	for _, want := range []string{"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
		"CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"} {
		if !strings.Contains(so.String(), want) {
			t.Errorf("payload status %q lacks %q", so.String(), want)
		}
	}
	atSpawn := strings.Contains(log.String(), "Name:bounding-at-spawn")
	if linux.SpawnBuilt && !strings.Contains(log.String(), "spawned=false") && !atSpawn {
		t.Errorf("a spawned init without cgo does not report its lockdown at the spawn: %s", log.String())
	}
	if !linux.SpawnBuilt && atSpawn {
		t.Errorf("without the spawner the init reports a lockdown at the spawn: %s", log.String())
	}
}
