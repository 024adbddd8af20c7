package runner

import (
	"runtime"
	"strings"
	"testing"
)

// TestWarmReadsItsOwnStatus checks that Warm's tool run reaches the read
// itself (a warm-up that failed early would warm nothing past the failure).
func TestWarmReadsItsOwnStatus(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/PID/status is Linux's")
	}
	out := warmRead()
	if out.IsError || !strings.Contains(out.Content, "Pid:") {
		t.Fatalf("warmRead = %+v, want the process's status", out)
	}
}
