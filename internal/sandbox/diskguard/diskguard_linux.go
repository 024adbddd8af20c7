package diskguard

import (
	"bytes"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Poll is how often a guard reads the free space. A writer at 2 GB/s
// gets about 40 MB past the floor before the kill.
const Poll = 20 * time.Millisecond

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
// call may write, and of every writable file system mounted beneath them
// (a sandbox's grant is a recursive bind: a disk mounted inside a granted
// tree is written through it), and their floors (set: see Floor; and
// InodeFloor). Call it before anything of the call runs, so that what the
// call writes counts as its own; then Watch, or Close. It returns nil when
// no source can be opened.
func Open(sources []string, set int64) *Guard {
	var fss []guarded
	seen := map[uint64]bool{}
	for _, src := range slices.Concat(sources, mountsBeneath(sources)) {
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

// mountsBeneath returns the mount points of this process's mount namespace
// that lie strictly beneath one of dirs and are mounted read-write: the
// file systems a recursive bind of dirs lets a sandbox write besides
// their own. It reads mountinfo with open and read alone (no poller, no
// scanner): it runs before every call.
func mountsBeneath(dirs []string) []string {
	b, err := readMountinfo()
	if err != nil {
		return nil
	}
	var out []string
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		// id parent major:minor root mount-point options ...
		var f [6][]byte
		n := 0
		for n < len(f) && len(line) > 0 {
			i := bytes.IndexByte(line, ' ')
			if i < 0 {
				i = len(line)
			}
			f[n], n = line[:i], n+1
			line = line[min(i+1, len(line)):]
		}
		if n < len(f) || readOnly(string(f[5])) {
			continue
		}
		point := unescapeMountinfo(string(f[4]))
		for _, d := range dirs {
			if d = filepath.Clean(d); strings.HasPrefix(point, d+"/") || d == "/" && point != "/" {
				out = append(out, point)
				break
			}
		}
	}
	return out
}

// readMountinfo returns this process's /proc/self/mountinfo.
func readMountinfo() ([]byte, error) {
	fd, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	b := make([]byte, 0, 16<<10)
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, cap(b))
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

// readOnly reports whether a mountinfo line's per-mount options say ro.
func readOnly(opts string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == "ro" {
			return true
		}
	}
	return false
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space,
// \011, \012, \134) in a path.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
