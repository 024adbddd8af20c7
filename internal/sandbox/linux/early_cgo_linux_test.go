//go:build cgo

package linux_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
)

// In a cgo build the init's securebits, bounding and ambient sets and
// no_new_privs are set by a constructor before the Go runtime starts (one
// thread, no all-threads calls), and the payload still has no capability,
// an empty bounding set and no_new_privs.
func TestBoundingBeforeRuntime(t *testing.T) {
	var log strings.Builder
	b, err := linux.New(&linux.Options{Executable: os.Args[0], Cgroups: linux.CgroupsOptional,
		Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	var so, se bytes.Buffer
	_, err = b.Run(context.Background(), &sandbox.Spec{
		Command: []string{"/bin/sh", "-c", "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status"},
		Env:     []string{"PATH=/usr/bin:/bin"}, Stdout: &so, Stderr: &se,
		Limits: sandbox.Limits{Wall: 30 * time.Second, AllowUnenforced: acceptUnenforced}})
	if err != nil {
		t.Fatalf("Run: %v (stderr %q)", err, se.String())
	}
	for _, want := range []string{"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
		"CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1"} {
		if !strings.Contains(so.String(), want) {
			t.Errorf("payload status %q lacks %q", so.String(), want)
		}
	}
	if !strings.Contains(log.String(), "Name:bounding-before-runtime") {
		t.Errorf("the init's phases do not show the lockdown before the runtime: %s", log.String())
	}
}
