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
)

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
	fd    int   // an O_PATH descriptor of a source on it
	start int64 // its free space when the guard started (bytes)
	floor int64
}

// free returns the free space of the file system of fd for unprivileged
// writers (f_bavail) and its size, or false if they cannot be read.
func free(fd int) (avail, size int64, ok bool) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return 0, 0, false
	}
	return int64(st.Bavail) * st.Bsize, int64(st.Blocks) * st.Bsize, true
}

// Start guards the file systems of sources, the host paths a call may
// write, with floor set (see Floor), and calls kill once when one falls
// below its floor and below its free space at the start. It returns what
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
		avail, size, ok := free(fd)
		if !ok || unix.Fstat(fd, &st) != nil || seen[st.Dev] {
			unix.Close(fd)
			continue
		}
		seen[st.Dev] = true
		fss = append(fss, guarded{fd: fd, start: avail, floor: Floor(size, set)})
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
				if avail, _, ok := free(f.fd); ok && avail < f.floor && avail < f.start-slack {
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
