package diskguard

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// Poll is how often a guard reads the free space. A writer at 2 GB/s
	// gets about 40 MB past the floor before the kill.
	Poll = 20 * time.Millisecond
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

// guarded is one file system a call may write.
type guarded struct {
	fd         int   // an O_PATH descriptor of a source on it
	start      int64 // its free space when the guard started (bytes)
	floor      int64
	startFiles int64 // its free inodes then
	fileFloor  int64 // 0: inodes not guarded
}

// space is what a file system has: its free space for unprivileged
// writers (f_bavail) and size in bytes, and its free and total inodes.
type space struct{ avail, size, ffree, files int64 }

// free returns the space of the file system of fd, or false if it cannot
// be read.
func free(fd int) (space, bool) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return space{}, false
	}
	return space{int64(st.Bavail) * st.Bsize, int64(st.Blocks) * st.Bsize, int64(st.Ffree), int64(st.Files)}, true
}

// low reports whether f is below a floor and was drawn there since the
// start: below its free space or free inodes then by more than the slack.
func (f guarded) low(now space) bool {
	if now.avail < f.floor && now.avail < f.start-slack {
		return true
	}
	return f.fileFloor > 0 && now.ffree < f.fileFloor && now.ffree < f.startFiles-inodeSlack
}

// Start guards the file systems of sources, the host paths a call may
// write, with floor set (see Floor and InodeFloor), and calls kill once
// when one falls below its floor of free space or of free inodes, and
// below what it had at the start. It returns what
// stops the guard (once; later calls do nothing), which returns once the
// guard has stopped. With no
// source that can be opened, nothing is guarded.
func Start(sources []string, set int64, kill func()) (stop func()) {
	var fss []guarded
	seen := map[uint64]bool{}
	for _, src := range sources {
		fd, err := unix.Open(src, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		sp, ok := free(fd)
		if !ok || unix.Fstat(fd, &st) != nil || seen[st.Dev] {
			unix.Close(fd)
			continue
		}
		seen[st.Dev] = true
		fss = append(fss, guarded{fd: fd, start: sp.avail, floor: Floor(sp.size, set), startFiles: sp.ffree, fileFloor: InodeFloor(sp.files)})
	}
	if len(fss) == 0 {
		return func() {}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(Poll)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			for _, f := range fss {
				if now, ok := free(f.fd); ok && f.low(now) {
					kill()
					return
				}
			}
		}
	}()
	return sync.OnceFunc(func() {
		close(done)
		<-stopped
		for _, f := range fss {
			unix.Close(f.fd)
		}
	})
}
