package diskguard

const (
	// floorMin and floorMax bound the floor, 1% of the file system's
	// size, which is also at most a quarter of it.
	floorMin = 256 << 20
	floorMax = 4 << 30
	// slack is how much free space a call may use below the floor before
	// it is stopped: other processes' writes and the file system's own
	// bookkeeping move the count too.
	slack = 1 << 20
	// inodeFloorMin, inodeFloorMax and inodeSlack are the same for the
	// file system's free inodes (1% of them, at most a quarter).
	inodeFloorMin = 4096
	inodeFloorMax = 1 << 20
	inodeSlack    = 256
)

// InodeFloor is the number of free inodes a guard keeps on a file system
// of files inodes: 1% of them within 4096 and 1Mi, at most a quarter; 0
// (no guard) for a file system that counts no inodes (btrfs).
func InodeFloor(files int64) int64 {
	if files <= 0 {
		return 0
	}
	return min(max(files/100, inodeFloorMin), inodeFloorMax, files/4)
}

// Floor is the free space a guard keeps on a file system of size bytes:
// set when it is positive, else 1% of size within 256 MiB and 4 GiB, and
// at most a quarter of size.
func Floor(size, set int64) int64 {
	if set > 0 {
		return set
	}
	return min(max(size/100, floorMin), floorMax, size/4)
}
