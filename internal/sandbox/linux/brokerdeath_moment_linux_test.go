package linux_test

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
)

// Hostile case 53 at any moment: a broker killed at a random point of
// starting, claiming, running or tearing down sandboxes (cold and warm,
// tool mode and command mode, with daemons that left their process
// group) leaves no process of them behind.
func TestBrokerDeathAnyMoment(t *testing.T) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 53))
	for i := range 6 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBrokerMomentChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "AIRLOCK_BROKER_MOMENT_CHILD=1")
		cmd.Stdout, cmd.Stderr = nil, nil
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		d := time.Duration(rng.IntN(1500)) * time.Millisecond
		time.Sleep(d)
		seen := len(procsMatching("98782"))
		inits := childrenOf(cmd.Process.Pid)
		cmd.Process.Kill()
		cmd.Wait()
		deadline := time.Now().Add(10 * time.Second)
		for {
			ps := procsMatching("98782")
			for _, pid := range inits {
				if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
					ps = append(ps, pid)
				}
			}
			if len(ps) == 0 {
				t.Logf("run %d: killed after %v with %d sandbox inits and %d of their processes running; none outlived it", i, d, len(inits), seen)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %d, broker killed after %v: processes %v outlived it", i, d, ps)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestBrokerMomentChild is the broker TestBrokerDeathAnyMoment kills.
func TestBrokerMomentChild(t *testing.T) {
	if os.Getenv("AIRLOCK_BROKER_MOMENT_CHILD") != "1" {
		t.Skip("runs only as the child of TestBrokerDeathAnyMoment")
	}
	b, err := linux.New(&linux.Options{Executable: os.Args[0], Cgroups: linux.CgroupsOptional, PoolSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	daemons := "setsid sleep 987821 & (sleep 987822 &); nohup sleep 987823 >/dev/null 2>&1 & "
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				spec := &sandbox.Spec{Limits: sandbox.Limits{Wall: 60 * time.Second, AllowUnenforced: true}, Env: []string{"PATH=/usr/bin:/bin", "HOME=/tmp"}}
				if w == 0 {
					spec.Command = []string{"/bin/sh", "-c", daemons + "sleep 987824"}
				} else {
					spec.Stdin = strings.NewReader("sh:" + daemons + "sleep 0.0" + string(rune('1'+w)) + "; echo 987825")
				}
				var so, se strings.Builder
				spec.Stdout, spec.Stderr = &so, &se
				_, _ = b.Run(context.Background(), spec)
			}
		}()
	}
	wg.Wait()
}
