//go:build !linux

package diskguard

// Floor is the free space a guard keeps; no guard runs on this platform.
func Floor(size, set int64) int64 {
	if set > 0 {
		return set
	}
	return min(max(size/100, 256<<20), 4<<30, size/4)
}

// InodeFloor is the number of free inodes a guard keeps; no guard runs on
// this platform.
func InodeFloor(files int64) int64 {
	if files <= 0 {
		return 0
	}
	return min(max(files/100, 4096), 1<<20, files/4)
}

// Guard guards nothing on this platform, where no sandbox runs.
type Guard struct{}

// Open returns nil: no guard runs on this platform.
func Open(sources []string, set int64) *Guard { return nil }

// Close does nothing.
func (g *Guard) Close() {}

// Watch does nothing.
func (g *Guard) Watch(kill func()) (stop func()) { return func() {} }
