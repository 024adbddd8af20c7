package containtest_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

func TestScratch(t *testing.T) {
	backend := sandboxtest.Native(t)
	w, _ := filepath.EvalSymlinks(t.TempDir())
	for _, procs := range []int{1, 2, 8} {
		g, err := grant.FromFlags(w, grant.Flags{ReadWrite: []string{w},
			Limits: grant.Limits{Memory: 128 << 20, Processes: procs, Time: 20 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		s, err := broker.Open(&broker.Options{Grant: g, Backend: backend, RecordsDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		for _, cmd := range []string{
			"echo hi", "ls / | wc -l", "cat /proc/self/cgroup; ls -la /sys/fs/cgroup 2>&1 | head; echo $$ > /sys/fs/cgroup/cgroup.procs; echo rc=$?; echo max > /sys/fs/cgroup/pids.max; echo rc=$?",
			"i=0; while [ $i -lt 40 ]; do sleep 5 & i=$((i+1)); done 2>&1 | tail -2; ps -e 2>/dev/null | wc -l; ls /proc | grep -c '^[0-9]'",
		} {
			raw, _ := json.Marshal(map[string]any{"command": cmd, "cwd": w})
			res, err := s.Call(context.Background(), "shell", raw)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("procs=%d %q: class %s\n%s", procs, cmd, res.Class, res.Output.Content)
		}
		s.Close()
	}
}
