package diskguard

import "testing"

func TestFloor(t *testing.T) {
	const mib, gib = 1 << 20, 1 << 30
	for _, tt := range []struct{ size, set, want int64 }{
		{size: 100 * gib, want: gib},          // 1%
		{size: 2000 * gib, want: 4 * gib},     // capped at 4 GiB
		{size: 10 * gib, want: 256 * mib},     // at least 256 MiB
		{size: 512 * mib, want: 128 * mib},    // at most a quarter of the file system
		{size: 10 * gib, set: mib, want: mib}, // set
	} {
		if got := Floor(tt.size, tt.set); got != tt.want {
			t.Errorf("Floor(%d, %d) = %d, want %d", tt.size, tt.set, got, tt.want)
		}
	}
}

func TestInodeFloor(t *testing.T) {
	for _, tt := range []struct{ files, want int64 }{
		{0, 0},                // btrfs and the like count none: not guarded
		{10_000_000, 100_000}, // 1%
		{1 << 30, 1 << 20},    // capped
		{1_000_000, 10_000},   // 1%
		{100_000, 4096},       // at least 4096
		{10_000, 2500},        // at most a quarter
	} {
		if got := InodeFloor(tt.files); got != tt.want {
			t.Errorf("InodeFloor(%d) = %d, want %d", tt.files, got, tt.want)
		}
	}
}
