package proctree

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestTreeFindsChildren(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var sleeps int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		procs, err := Tree(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if procs[0].PID != os.Getpid() || procs[0].RSSKiB == 0 || procs[0].PSSKiB == 0 {
			t.Fatalf("root = %+v, want this process with RSS and PSS", procs[0])
		}
		sleeps = 0
		for _, p := range procs {
			if p.Comm == "sleep" {
				sleeps++
			}
		}
		if sleeps == 2 {
			return
		}
	}
	t.Fatalf("found %d sleep descendants, want 2", sleeps)
}

func TestSelfKiB(t *testing.T) {
	rss, hwm, err := SelfKiB()
	if err != nil {
		t.Fatal(err)
	}
	if rss <= 0 || hwm < rss {
		t.Errorf("SelfKiB = %d, %d; want 0 < rss <= hwm", rss, hwm)
	}
}
