//go:build !linux

package egress_test

import "time"

// cpuTime is not measured off Linux.
func cpuTime() time.Duration { return 0 }
