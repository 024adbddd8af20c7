//go:build unix

package wasm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/wasm/wasmtest"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"golang.org/x/sys/unix"
)

// blockWatch runs calls that must return without waiting on a FIFO, and
// gets them unstuck when they do not.
type blockWatch struct {
	t     *testing.T
	fifos []string
	// wait is how long a call may take before it is taken as blocked: as
	// long as the most loaded machine could need, the first time. Once one
	// call has blocked the test has failed, and the next calls are given
	// a second each, so that a broken build fails in minutes, not hours.
	wait time.Duration
}

func newBlockWatch(t *testing.T, fifos ...string) *blockWatch {
	return &blockWatch{t: t, fifos: fifos, wait: time.Minute}
}

// returns runs f, which must not call t, and waits for it to return. When
// it has not returned in w.wait, the test fails, and every FIFO of w is
// opened for reading and writing at once, which completes any open
// waiting on it, until f returns (for at most another minute).
func (w *blockWatch) returns(what string, f func()) {
	w.t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
		return
	case <-time.After(w.wait):
	}
	w.t.Errorf("%s did not return: it waits on a FIFO the module controls", what)
	w.wait = time.Second
	giveUp := time.After(time.Minute)
	for {
		for _, p := range w.fifos {
			if fd, err := unix.Open(p, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
				unix.Close(fd)
			}
		}
		select {
		case <-done:
			return
		case <-giveUp:
			w.t.Fatalf("%s still blocked after its FIFOs were opened", what)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func mkfifo(t *testing.T, p string) {
	t.Helper()
	if err := unix.Mkfifo(p, 0o666); err != nil {
		t.Fatal(err)
	}
}

// mknod makes a character device node; dev's type differs between
// systems' Mknod.
func mknod[D int | uint64](mk func(string, uint32, D) error, p string, dev uint64) error {
	return mk(p, unix.S_IFCHR|0o666, D(dev))
}

// TestSpecialFilesAreRefusedWithoutBlocking: opening a FIFO (or a socket,
// or a device) in a preopen returns at once with EACCES, whatever the flags,
// through a symlink too. The open was a blocking open(2) in the broker's
// own process, which the run's deadline cannot interrupt: a capsule that
// made a FIFO with its own shell call and opened it outlived its 5 s time
// limit by hours and ignored SIGTERM (red team).
func TestSpecialFilesAreRefusedWithoutBlocking(t *testing.T) {
	dir := tempDir(t)
	fifo := filepath.Join(dir, "fifo")
	mkfifo(t, fifo)
	if err := os.Symlink("fifo", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	names := []string{"fifo", "link", "sock"}
	if err := mknod(unix.Mknod, filepath.Join(dir, "null"), unix.Mkdev(1, 3)); err == nil {
		names = append(names, "null")
	} else {
		t.Logf("no device node (mknod: %v): devices are not tried", err)
	}
	w := newBlockWatch(t, fifo)

	const (
		rd  = experimentalsys.O_RDONLY
		wr  = experimentalsys.O_WRONLY
		rw  = experimentalsys.O_RDWR
		crt = experimentalsys.O_CREAT
		trn = experimentalsys.O_TRUNC
		app = experimentalsys.O_APPEND
	)
	flags := []struct {
		name string
		fl   experimentalsys.Oflag
	}{
		{"rdonly", rd}, {"wronly", wr}, {"rdwr", rw}, {"rdonly|creat", rd | crt}, {"wronly|creat", wr | crt},
		{"wronly|trunc", wr | trn}, {"wronly|append", wr | app}, {"rdwr|creat|trunc", rw | crt | trn},
	}
	g := testGrant(t, dir, "[paths]\nread_write = [\".\"]\n")
	for _, tc := range []struct {
		name     string
		grant    *grant.Grant
		readOnly bool
	}{
		{"no grant", nil, false},
		{"grant", g, false},
		{"read-only", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.t = t
			fsys, err := newRootFS(dir, nil, tc.readOnly, tc.grant, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer fsys.close()
			for _, p := range names {
				for _, fl := range flags {
					if tc.readOnly && writes(fl.fl) {
						continue // EROFS before anything is opened
					}
					what := fmt.Sprintf("OpenFile(%s, %s)", p, fl.name)
					var file experimentalsys.File
					var e experimentalsys.Errno
					w.returns(what, func() { file, e = fsys.OpenFile(p, fl.fl, 0o644) })
					if file != nil {
						file.Close()
					}
					want := experimentalsys.EACCES
					if p == "sock" && tc.grant != nil {
						// The grant hides a host's socket in its tree
						// (masked): not there at all.
						want = experimentalsys.ENOENT
					}
					if e != want {
						t.Errorf("%s: errno %v, want %v", what, e, want)
					}
				}
			}
			// Still a FIFO: O_CREAT opened it rather than make a file.
			if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
				t.Errorf("the FIFO is now %v (%v)", fi.Mode(), err)
			}
		})
	}
	w.t = t

	// Files opened as regular ones are reopened by name to turn on append
	// and to list a directory again from its start; a FIFO put in their
	// place is not opened, or not waited on.
	fsys, err := newRootFS(dir, nil, false, g, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.close()
	swap := func(name string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.Rename(p, p+".old"); err != nil {
			t.Fatal(err)
		}
		mkfifo(t, p)
		w.fifos = append(w.fifos, p)
		return p
	}
	write(t, filepath.Join(dir, "file"), "regular")
	file, e := fsys.OpenFile("file", wr, 0)
	if e != 0 {
		t.Fatalf("opening a regular file: errno %v", e)
	}
	swap("file")
	w.returns("SetAppend after a FIFO took the file's place", func() { e = file.SetAppend(true) })
	if e == 0 {
		t.Error("SetAppend reopened a FIFO in the file's place")
	}
	file.Close()

	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	file, e = fsys.OpenFile("d", rd, 0)
	if e != 0 {
		t.Fatalf("opening a directory: errno %v", e)
	}
	if _, e := file.Seek(0, io.SeekStart); e != 0 {
		t.Fatalf("rewinding the directory: errno %v", e)
	}
	swap("d")
	w.returns("Readdir after a FIFO took the directory's place", func() { _, e = file.Readdir(-1) })
	if e == 0 {
		t.Error("Readdir listed a FIFO in the directory's place")
	}
	file.Close()
}

// TestPreopenThatIsAFIFOIsRefused: a granted directory that a FIFO has
// replaced is refused when it is opened, not waited on.
func TestPreopenThatIsAFIFOIsRefused(t *testing.T) {
	m := probe(t)
	p := filepath.Join(tempDir(t), "work")
	mkfifo(t, p)
	w := newBlockWatch(t, p)
	var r *os.Root
	var err error
	w.returns("openDir of a FIFO", func() { r, err = openDir(p) })
	if err == nil {
		r.Close()
		t.Error("openDir opened a FIFO as a directory")
	}
	cfg := &Config{Dirs: []Dir{{Host: p, Guest: p}}, Time: time.Minute}
	w.returns("Run with a FIFO for a preopen", func() { _, err = testEngine(t).Run(context.Background(), m, cfg) })
	if err == nil {
		t.Error("a run started with a FIFO for a preopen")
	}
}

// TestOpeningAFIFOEndsTheRunInTime: a capsule opening a FIFO in its
// preopen, as the red team's did, gets EACCES and goes on; the run ends.
func TestOpeningAFIFOEndsTheRunInTime(t *testing.T) {
	m := probe(t)
	dir := tempDir(t)
	fifo := filepath.Join(dir, "p")
	mkfifo(t, fifo)
	w := newBlockWatch(t, fifo)
	for _, args := range [][]string{
		{"read", fifo},
		{"write", fifo, "x"},
		{"open", fifo, "rdwr", "creat"},
	} {
		var out bytes.Buffer
		var o *Outcome
		var err error
		cfg := &Config{
			Args:   append([]string{"probe"}, args...),
			Dirs:   []Dir{{Host: dir, Guest: dir}},
			Stdout: &out,
			Time:   5 * time.Second,
		}
		w.returns(fmt.Sprintf("a run of probe %v", args), func() { o, err = testEngine(t).Run(context.Background(), m, cfg) })
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.String(), "err") || !strings.Contains(out.String(), "Permission denied") || o.ExitCode != 0 {
			t.Errorf("probe %v: exit %d %q, want permission denied", args, o.ExitCode, out.String())
		}
	}
}

// TestWasmToolAndAFIFO: a wasm tool asked to open a FIFO in its directory
// answers at once; a session whose tool module or tool directory a FIFO
// has replaced starts, or fails, without waiting on it.
func TestWasmToolAndAFIFO(t *testing.T) {
	ws := tempDir(t)
	work := filepath.Join(ws, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(work, "p")
	mkfifo(t, fifo)
	b, err := os.ReadFile(wasmtest.Build(t, "testdata/upper"))
	if err != nil {
		t.Fatal(err)
	}
	mod := filepath.Join(ws, "upper.wasm")
	if err := os.WriteFile(mod, b, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	g := testGrant(t, ws, fmt.Sprintf(`
[paths]
read_write = ["."]
[tools.wasm.upper]
module = %q
sha256 = %q
description = "Upper-cases text."
read_write = ["work"]
time = "5s"
`, mod, hex.EncodeToString(sum[:])))
	w := newBlockWatch(t, fifo, mod, work)
	tools, err := NewTools(context.Background(), testEngine(t), g)
	if err != nil {
		t.Fatal(err)
	}
	defer tools.Close()
	var r *Result
	w.returns("a wasm tool call opening a FIFO", func() {
		r, err = tools.Call(context.Background(), g, "upper", json.RawMessage(`{"path":"`+fifo+`"}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	if out := string(r.Stdout); !strings.Contains(out, "Permission denied") || r.Outcome.ExitCode != 1 {
		t.Errorf("opening a FIFO: exit %d %q, want permission denied", r.Outcome.ExitCode, out)
	}

	// The session's tools are loaded anew with a FIFO for the directory:
	// it is not one (as a directory missing is not), the tool still runs.
	if err := os.Rename(work, work+".old"); err != nil {
		t.Fatal(err)
	}
	mkfifo(t, work)
	var again *Tools
	w.returns("loading a wasm tool whose directory is a FIFO", func() { again, err = NewTools(context.Background(), testEngine(t), g) })
	if err != nil {
		t.Errorf("loading a wasm tool whose directory is a FIFO: %v", err)
	} else {
		again.Close()
	}

	// And with a FIFO for the module: refused.
	if err := os.Remove(mod); err != nil {
		t.Fatal(err)
	}
	mkfifo(t, mod)
	w.returns("loading a wasm tool whose module is a FIFO", func() { again, err = NewTools(context.Background(), testEngine(t), g) })
	if err == nil {
		again.Close()
		t.Error("a FIFO was loaded as a wasm tool's module")
	}
}
