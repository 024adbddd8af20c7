package broker

import "testing"

// The kernel buffers of a sandbox's tunnels together stay within its
// memory limit, at least 1 MiB each, and unbounded where that is more than
// the kernel would give a socket anyway.
func TestSocketBuffer(t *testing.T) {
	for _, tt := range []struct {
		memory int64
		want   int
	}{
		{0, 0},
		{64 << 20, 1 << 20},
		{16 << 20, 1 << 20},
		{1 << 30, 16 << 20},
		{2 << 30, 32 << 20},
		{4 << 30, 0},
	} {
		if got := socketBuffer(tt.memory); got != tt.want {
			t.Errorf("socketBuffer(%d MiB) = %d, want %d", tt.memory>>20, got, tt.want)
		}
	}
}
