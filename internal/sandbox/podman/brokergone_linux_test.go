package podman

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/procid"
)

// TestLiveBrokerKilledEndsItsBackgroundWork: a broker killed with SIGKILL
// takes its background work with it, on Podman as on the native backend,
// even when no broker starts again to sweep its containers. The podman
// client dies with the broker, but the container ran on under conmon
// until its --timeout, the background wall time (24 h by default) plus
// 5 s: a day of a command nothing owns, writing the user's tree, with no
// one to stop it or record its end. The init reads the broker's control
// pipe, whose only writer is the broker's run: its end of file, while
// the container runs, is the broker gone.
func TestLiveBrokerKilledEndsItsBackgroundWork(t *testing.T) {
	if os.Getenv("AIRLOCK_PODMAN_HELPER") == "bg" {
		b, err := New(&Options{Image: os.Getenv("AIRLOCK_PODMAN_IMAGE"), Executable: os.Getenv("AIRLOCK_PODMAN_EXE")})
		if err != nil {
			t.Fatal(err)
		}
		ws := os.Getenv("AIRLOCK_PODMAN_WORK")
		g, err := grant.Parse([]byte("[paths]\nread_write = [\".\"]\n"), "g.toml", ws)
		if err != nil {
			t.Fatal(err)
		}
		s, err := broker.Open(&broker.Options{Grant: g, Backend: b, RecordsDir: os.Getenv("AIRLOCK_PODMAN_RECORDS")})
		if err != nil {
			t.Fatal(err)
		}
		args, _ := json.Marshal(map[string]any{"command": os.Getenv("AIRLOCK_PODMAN_COMMAND"), "run_in_background": true})
		res, err := s.Call(context.Background(), "shell", args)
		if err != nil || res.Output.Meta.WorkID == "" {
			t.Fatalf("starting the work: %v %+v", err, res)
		}
		fmt.Println("work", res.Output.Meta.WorkID)
		select {} // until killed
	}
	needPodman(t)
	ws := t.TempDir()
	marker := fmt.Sprintf("airlock-bg-gone-%d", time.Now().UnixNano())
	// The work writes a file each 0.1 s, so its life shows in the tree.
	command := fmt.Sprintf("while :; do date +%%s%%N > beat; sleep 0.1; done # %s", marker)
	cmd := exec.Command(os.Args[0], "-test.run=^TestLiveBrokerKilledEndsItsBackgroundWork$", "-test.v")
	cmd.Env = append(os.Environ(), "AIRLOCK_PODMAN_HELPER=bg", "AIRLOCK_PODMAN_IMAGE="+live.img, "AIRLOCK_PODMAN_EXE="+live.exe,
		"AIRLOCK_PODMAN_WORK="+ws, "AIRLOCK_PODMAN_RECORDS="+t.TempDir(), "AIRLOCK_PODMAN_COMMAND="+command)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	broker := string(procid.Of(cmd.Process.Pid))
	// Whatever happens, no container of the helper is left for an hour:
	// a backend's start sweeps those of a broker that is gone.
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		newLive(t)
	})
	beat := filepath.Join(ws, "beat")
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(beat); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the work never started; helper:\n%s", out.String())
		}
	}
	if containersOf(t, broker) == "" || len(processesWith(marker)) == 0 {
		t.Fatalf("the helper's container is not listed under its label, or its command not running: %v", processesWith(marker))
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	// No broker starts again. The work must end all the same: a cap, not
	// a timing (its command would otherwise run for the hour).
	for deadline := time.Now().Add(60 * time.Second); len(processesWith(marker)) > 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("60 s after its broker was killed, its background work still runs (processes %v, container %q)", processesWith(marker), containersOf(t, broker))
		}
	}
}

// processesWith lists the processes whose command line holds s.
func processesWith(s string) []string {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []string
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err == nil && bytes.Contains(b, []byte(s)) {
			pids = append(pids, filepath.Base(d))
		}
	}
	return pids
}
