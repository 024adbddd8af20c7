package linux

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A FUSE server that answers INIT and GETATTR and never answers the
// open, as a hung or hostile server would.
const (
	fuseGetattr = 3
	fuseInit    = 26
	fuseOpendir = 27
)

// serveHungFUSE serves the FUSE connection fd: it sends the request's id
// on opened when the kernel asks it to open its root, and does not answer
// that (see failFUSE).
func serveHungFUSE(fd int, opened chan<- uint64) {
	buf := make([]byte, 1<<20)
	reply := func(unique uint64, body []byte) {
		out := make([]byte, 16+len(body))
		binary.LittleEndian.PutUint32(out[0:], uint32(len(out)))
		binary.LittleEndian.PutUint64(out[8:], unique)
		copy(out[16:], body)
		_, _ = unix.Write(fd, out)
	}
	for {
		n, err := unix.Read(fd, buf)
		if err != nil || n < 40 {
			return
		}
		op := binary.LittleEndian.Uint32(buf[4:])
		unique := binary.LittleEndian.Uint64(buf[8:])
		switch op {
		case fuseInit:
			body := make([]byte, 64)
			binary.LittleEndian.PutUint32(body[0:], 7)      // major
			binary.LittleEndian.PutUint32(body[4:], 31)     // minor
			binary.LittleEndian.PutUint32(body[8:], 1<<16)  // max_readahead
			binary.LittleEndian.PutUint32(body[20:], 1<<16) // max_write
			binary.LittleEndian.PutUint32(body[24:], 1)     // time_gran
			binary.LittleEndian.PutUint16(body[28:], 1)     // max_pages
			reply(unique, body)
		case fuseGetattr:
			body := make([]byte, 104)
			binary.LittleEndian.PutUint64(body[0:], 3600) // attr_valid
			a := body[16:]
			binary.LittleEndian.PutUint64(a[0:], 1)                   // ino
			binary.LittleEndian.PutUint32(a[60:], unix.S_IFDIR|0o755) // mode
			binary.LittleEndian.PutUint32(a[64:], 2)                  // nlink
			reply(unique, body)
		case fuseOpendir:
			opened <- unique // and no answer
		default:
			failFUSE(fd, unique, unix.ENOSYS)
		}
	}
}

// failFUSE answers the request unique on the FUSE connection fd with errno.
func failFUSE(fd int, unique uint64, errno unix.Errno) {
	out := make([]byte, 16)
	binary.LittleEndian.PutUint32(out[0:], 16)
	e := -int32(errno)
	binary.LittleEndian.PutUint32(out[4:], uint32(e))
	binary.LittleEndian.PutUint64(out[8:], unique)
	_, _ = unix.Write(fd, out)
}

// TestPlaceholderOnHungFUSE: a placeholder's name that is the root of a
// FUSE mount whose server does not answer (a user's mount in the tree)
// holds up only the hold that opens it, not the broker: the open is not a
// raw system call, which would keep its P and make the next garbage
// collection wait for it with every goroutine stopped. The parent is on a
// local file system (tmpfs), where the raw calls are used.
func TestPlaceholderOnHungFUSE(t *testing.T) {
	if dir := os.Getenv("AIRLOCK_TEST_FUSE_HOLD"); dir != "" {
		fuseHoldChild(dir)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("mounting FUSE needs root")
	}
	base, err := os.MkdirTemp("/dev/shm", "airlock-fuse-")
	if err != nil {
		t.Skip("no tmpfs at /dev/shm:", err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	var st unix.Statfs_t
	if unix.Statfs(base, &st) != nil || st.Type != unix.TMPFS_MAGIC {
		t.Skip("/dev/shm is not a tmpfs")
	}
	mnt := filepath.Join(base, ".vscode")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skip("no /dev/fuse:", err)
	}
	defer unix.Close(fd)
	if err := unix.Mount("airlock-test", mnt, "fuse", unix.MS_NOSUID|unix.MS_NODEV,
		fmt.Sprintf("fd=%d,rootmode=40000,user_id=0,group_id=0", fd)); err != nil {
		t.Skip("mounting FUSE:", err)
	}
	defer unix.Unmount(mnt, unix.MNT_DETACH)
	opened := make(chan uint64, 4)
	go serveHungFUSE(fd, opened)

	cmd := exec.Command(os.Args[0], "-test.run=^TestPlaceholderOnHungFUSE$")
	cmd.Env = append(os.Environ(), "AIRLOCK_TEST_FUSE_HOLD="+base)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var open uint64
	select {
	case open = <-opened:
	case l := <-lines:
		t.Fatalf("the child's hold did not open the FUSE root: %q", l)
	}
	// The child's hold now waits in the open: it collects garbage.
	if _, err := stdin.Write([]byte("gc\n")); err != nil {
		t.Fatal(err)
	}
	// The child is ended whatever happens: the open is failed, so the
	// hold (and, unfixed, the garbage collection) goes on.
	defer failFUSE(fd, open, unix.EIO)
	select {
	case l := <-lines:
		if l != "gc done" {
			t.Fatalf("child said %q, want gc done", l)
		}
	case <-time.After(60 * time.Second):
		// Not a timing assertion: a raw open keeps the garbage
		// collection's stop-the-world waiting until the server answers,
		// which it never does.
		t.Fatal("the child's garbage collection waited on the hold's open of a hung FUSE server: the open was a raw system call")
	}
}

// fuseHoldChild holds the placeholder .vscode in dir (a FUSE mount that
// never answers its open) in a goroutine, and collects garbage when its
// stdin says so.
func fuseHoldChild(dir string) {
	pd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	go func() {
		h, err := lockPlaceholder(newRawDir(pd), ".vscode", tempPrefix+"test-.vscode", true, false)
		fmt.Fprintln(os.Stderr, "hold ended:", h, err)
	}()
	sc := bufio.NewScanner(os.Stdin)
	if !sc.Scan() {
		os.Exit(1)
	}
	runtime.GC()
	fmt.Println("gc done")
	os.Exit(0)
}
