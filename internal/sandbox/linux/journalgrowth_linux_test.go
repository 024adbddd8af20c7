package linux_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
)

// TestJournalDoesNotGrowPerCall: a broker's placeholder journal is
// emptied only when the process holds no placeholder, and every hold
// wrote each path it might make again. While one call held a placeholder
// (a long command, a background one of another session, over another
// tree), every call over a second tree appended all of its paths again,
// two lines each, existing protected paths too (a tree may hold 20,000
// that a sandbox made): the journal grew by the call, on the state
// directory's disk, for as long as the first call ran. A path is
// journalled once until the journal is emptied.
func TestJournalDoesNotGrowPerCall(t *testing.T) {
	state := t.TempDir()
	b, err := linux.New(&linux.Options{Executable: os.Args[0], Cgroups: linux.CgroupsOptional, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	d1, d2 := newDirs(t), newDirs(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	holding := runAsync(t, ctx, b, &sandbox.Spec{Mounts: d1.mounts(), ReadOnly: []string{d1.W + "/.envrc"},
		Command: []string{"/bin/sh", "-c", "touch started; sleep 987880"}, Cwd: d1.W})
	waitMade(t, filepath.Join(d1.W, "started"), holding)
	spec := func() *sandbox.Spec {
		return &sandbox.Spec{Mounts: d2.mounts(), Cwd: d2.W,
			ReadOnly:     []string{d2.W + "/.bashrc", d2.W + "/.mcp.json", d2.W + "/.vscode", d2.W + "/.git"},
			ReadOnlyDirs: []string{d2.W + "/.vscode", d2.W + "/.git"},
			Command:      []string{"/bin/true"}}
	}
	size := func() int64 {
		t.Helper()
		ents, err := os.ReadDir(filepath.Join(state, ".placeholders"))
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, e := range ents {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
		return n
	}
	call := func() {
		t.Helper()
		if err := <-runAsync(t, context.Background(), b, spec()); err != nil {
			t.Fatal(err)
		}
	}
	call()
	first := size()
	for range 10 {
		call()
	}
	if after := size(); after != first {
		t.Errorf("the journal grew from %d to %d bytes over 10 calls while another call held a placeholder", first, after)
	}
	cancel()
	<-holding
}
