package linux

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSealLayerOfAKilledBrokerIsRemoved: the empty directory a broker
// makes for the overlay that seals its binary (emptyLayer) lives while
// the overlay is made, at the broker's start; a broker killed then (an
// agent's client that gives up on a slow start, kill -9 of a process
// group) left it, and nothing ever removed it: a kill -9 storm of
// airlock call left five in /dev/shm. The next broker to seal its binary
// removes a dead broker's. The child half is TestSealLayerChild.
func TestSealLayerOfAKilledBrokerIsRemoved(t *testing.T) {
	if f, err := sealOverlay(os.Args[0]); err != nil {
		t.Skipf("this process may not seal through an overlay: %v", err)
	} else {
		f.Close()
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSealLayerChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "AIRLOCK_SEAL_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var layer string
	for sc := bufio.NewScanner(out); sc.Scan(); {
		if p, ok := strings.CutPrefix(sc.Text(), "layer "); ok {
			layer = p
			break
		}
	}
	if layer == "" {
		t.Fatal("the child made no layer")
	}
	defer os.Remove(layer)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if _, err := os.Stat(layer); err != nil {
		t.Fatalf("the killed child's layer %s is gone already: %v", layer, err)
	}
	f, err := sealOverlay(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := os.Stat(layer); err == nil {
		t.Errorf("the next sealing left %s, a killed broker's empty layer", layer)
	}
}

// TestSealLayerChild makes the empty layer of a sealing, as a broker
// starting does, and is killed holding it.
func TestSealLayerChild(t *testing.T) {
	if os.Getenv("AIRLOCK_SEAL_CHILD") != "1" {
		t.Skip("runs only as the child of TestSealLayerOfAKilledBrokerIsRemoved")
	}
	real, err := filepath.EvalSymlinks(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	layer, err := emptyLayer(filepath.Dir(real))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("layer %s\n", layer)
	time.Sleep(time.Minute)
}
