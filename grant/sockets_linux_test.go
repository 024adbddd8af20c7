package grant

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// listenUnix makes a listening Unix socket at p, as a host service would,
// closed when the test ends.
func listenUnix(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	t.Cleanup(func() { ln.Close() })
}

// socketFixture is a tree holding host sockets at its top, deep in it, and
// in a directory granted read-only inside it and beside it, with ordinary
// files around them.
func socketFixture(t *testing.T) (dir string, sockets []string) {
	dir = fixture(t, "rw/main.go", "rw/a/b/c/d/notes.txt", "ro/lib/x.go", "rw/vendor/ro/y.go")
	for _, s := range []string{"rw/top.sock", "rw/a/b/c/d/deep.sock", "ro/lib/svc.sock", "rw/vendor/ro/in.sock"} {
		p := filepath.Join(dir, s)
		listenUnix(t, p)
		sockets = append(sockets, p)
	}
	return dir, sockets
}

// TestUnixSocketsInGrantedTreesHidden checks that a host service's Unix
// socket in a granted tree, read-write or read-only, at its top or deep
// in it, is hidden (masked, and refused to the tools with a reason that
// says why), whichever way the scan learns an entry's type,
// while the files beside it stay open.
func TestUnixSocketsInGrantedTreesHidden(t *testing.T) {
	for _, lstat := range []bool{false, true} {
		t.Run(map[bool]string{false: "d_type", true: "lstat"}[lstat], func(t *testing.T) {
			scanForceLstat = lstat
			t.Cleanup(func() { scanForceLstat = false })
			dir, sockets := socketFixture(t)
			rw, ro := filepath.Join(dir, "rw"), filepath.Join(dir, "ro")
			g, err := FromFlags(rw, Flags{ReadWrite: []string{rw}, ReadOnly: []string{ro, filepath.Join(rw, "vendor", "ro")}})
			if err != nil {
				t.Fatal(err)
			}
			masks := g.Masks()
			for _, s := range sockets {
				if !slices.Contains(masks, s) {
					t.Errorf("masks %v lack the socket %s", masks, s)
				}
				for _, write := range []bool{false, true} {
					d := g.CheckPath(s, write)
					if d.Allowed || d.Rule != socketRule || !strings.Contains(d.Reason, "Unix socket") || !strings.Contains(d.Reason, "no grant setting opens one") {
						t.Errorf("CheckPath(%s, write %v) = %+v, want a refusal saying it is a host's socket", s, write, d)
					}
				}
			}
			for _, p := range []string{"rw/main.go", "rw/a/b/c/d/notes.txt", "ro/lib/x.go"} {
				if d := g.CheckPath(filepath.Join(dir, p), false); !d.Allowed {
					t.Errorf("reading %s refused (%s), want it readable", p, d.Reason)
				}
			}
			if risks := g.ScanRisks(); len(risks) != 0 {
				t.Errorf("scan risks %q for trees scanned whole", risks)
			}
		})
	}
}

// TestUnixSocketMadeSinceHidden checks that a socket a host service makes
// after the grant is built is hidden by Rescan (a long-lived server's next
// session), and that one recorded by a session (NestedProtected) is hidden
// by Remember while it is still a socket, and not once it is a file.
func TestUnixSocketMadeSinceHidden(t *testing.T) {
	dir := fixture(t, "rw/main.go", "ro/x.go")
	rw, ro := filepath.Join(dir, "rw"), filepath.Join(dir, "ro")
	g, err := FromFlags(rw, Flags{ReadWrite: []string{rw}, ReadOnly: []string{ro}})
	if err != nil {
		t.Fatal(err)
	}
	later := []string{filepath.Join(rw, "later", "s.sock"), filepath.Join(ro, "later.sock")}
	for _, p := range later {
		listenUnix(t, p)
	}
	if m := g.Masks(); len(m) != 0 {
		t.Fatalf("masks %v before any socket existed", m)
	}
	r := g.Rescan()
	for _, p := range later {
		if !slices.Contains(r.Masks(), p) {
			t.Errorf("after Rescan, masks %v lack %s", r.Masks(), p)
		}
	}
	recorded := r.NestedProtected(rw)
	if !slices.ContainsFunc(recorded, func(p ProtectedPath) bool { return p.Path == later[0] && p.Name == socketRule }) {
		t.Fatalf("NestedProtected(%s) = %v, want the socket recorded", rw, recorded)
	}
	if m := g.Remember(recorded).Masks(); !slices.Contains(m, later[0]) {
		t.Errorf("Remember: masks %v lack the recorded socket", m)
	}
	if err := os.Remove(later[0]); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(later[0], nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if m := g.Remember(recorded).Masks(); slices.Contains(m, later[0]) {
		t.Errorf("Remember: a recorded socket that is now a file is masked: %v", m)
	}
}

// TestReadOnlySocketScanBounded checks that a read-only tree too large to
// read whole says so among the scan risks, and that a socket near its top
// is still found (the scan goes breadth first).
func TestReadOnlySocketScanBounded(t *testing.T) {
	dir := fixture(t, "rw/main.go")
	ro := filepath.Join(dir, "ro")
	deep := filepath.Join(ro, "a")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range maxProtectedScan + 10 {
		if err := os.WriteFile(filepath.Join(deep, fmt.Sprintf("f%06d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	top := filepath.Join(ro, "z.sock")
	listenUnix(t, top)
	g, err := FromFlags(filepath.Join(dir, "rw"), Flags{ReadWrite: []string{filepath.Join(dir, "rw")}, ReadOnly: []string{ro}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(g.Masks(), top) {
		t.Errorf("masks %v lack the socket at the top of the large tree", g.Masks())
	}
	risks := g.ScanRisks()
	if len(risks) != 1 || !strings.Contains(risks[0], ro) || !strings.Contains(risks[0], "Unix sockets") {
		t.Errorf("scan risks %q, want one saying %s was not scanned whole for sockets", risks, ro)
	}
}

// TestOpenDirRefusesWhatIsNoDirectory checks that the socket scan's open
// of a directory it listed fails at once, not blocking and not following,
// when the name has been swapped for a FIFO or a symlink since (by a
// sandbox of another grant that can write the tree).
func TestOpenDirRefusesWhatIsNoDirectory(t *testing.T) {
	dir := fixture(t, "real/x.go", "link -> $T/real")
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := openDir(fifo)
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, syscall.ENOTDIR) {
			t.Errorf("opening a FIFO as a directory: %v, want ENOTDIR", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("opening a FIFO as a directory still waits after a minute")
	}
	if f, err := openDir(filepath.Join(dir, "link")); !errors.Is(err, syscall.ELOOP) && !errors.Is(err, syscall.ENOTDIR) {
		if err == nil {
			f.Close()
		}
		t.Errorf("opening a symlink to a directory: %v, want it not followed (ELOOP or ENOTDIR)", err)
	}
	socks, complete := findSockets(dir, nil)
	if len(socks) != 0 || !complete {
		t.Errorf("findSockets = %v, %v; want none, complete", socks, complete)
	}
}
