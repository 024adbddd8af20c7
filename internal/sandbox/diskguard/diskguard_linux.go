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

// Guard is the free space and inodes of the file systems a call may
// write, as they were before the call ran (Open), to watch while it runs
// (Watch). A nil Guard guards nothing.
type Guard struct {
	fss   []guarded
	close sync.Once
}

// Open records the space of the file systems of sources, the host paths a
// call may write, and their floors (set: see Floor; and InodeFloor). Call
// it before anything of the call runs, so that what the call writes counts
// as its own; then Watch, or Close. It returns nil when no source can be
// opened.
func Open(sources []string, set int64) *Guard {
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
		return nil
	}
	return &Guard{fss: fss}
}

// Close releases g's descriptors. Watch's stop closes them too.
func (g *Guard) Close() {
	if g == nil {
		return
	}
	g.close.Do(func() {
		for _, f := range g.fss {
			unix.Close(f.fd)
		}
	})
}

// Watch reads g's file systems every Poll and calls kill once when one
// has fallen below its floor of free space or of free inodes, and below
// what it had at Open. It returns what stops the watch and closes g (once;
// later calls do nothing), which returns once the watch has stopped.
func (g *Guard) Watch(kill func()) (stop func()) {
	if g == nil {
		return func() {}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(Poll)
		defer t.Stop()
		for {
			for _, f := range g.fss {
				if now, ok := free(f.fd); ok && f.low(now) {
					kill()
					return
				}
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return sync.OnceFunc(func() {
		close(done)
		<-stopped
		g.Close()
	})
}
