package broker

import (
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/airlockhq/airlock/internal/procid"
)

// sweepEgressDirs removes a dead broker's socket directory and nothing
// else: not this live process's, not one of another PID namespace's
// broker (whose pid says nothing here), not an older broker's that names
// no owner, and not one whose directory holds more than its socket.
func TestSweepEgressDirsTakesOnlyTheDead(t *testing.T) {
	// t.TempDir's path is too long for the sockets.
	base, err := os.MkdirTemp("", "e")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	was := socketBases
	socketBases = func() []string { return []string{base} }
	defer func() { socketBases = was }()

	var mkSock func(name, sock string, extra bool) string
	dead := procid.ID(string(procid.Self()) + "1") // our pid, another start time
	here := procid.Space()
	if here == "" {
		t.Skip("this host does not tell PID namespaces apart")
	}
	mk := func(name string, extra bool) string {
		return mkSock(name, "proxy.sock", extra)
	}
	mkSock = func(name, sock string, extra bool) string {
		dir := filepath.Join(base, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("unix", filepath.Join(dir, sock))
		if err != nil {
			t.Fatal(err)
		}
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		l.Close()
		if extra {
			if err := os.WriteFile(filepath.Join(dir, "other"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return name
	}
	gone := mk(egressDirPrefix+egressOwner(dead, here)+"-1", false)
	goneNoSpace := mk(egressDirPrefix+egressOwner(dead, "")+"-2", false)
	// Killed between the bind and the rename (egress.Proxy.ListenUnix).
	goneUnrenamed := mkSock(egressDirPrefix+egressOwner(dead, here)+"-6", ".egress-0123456789ab", false)
	live := mk(egressDirPrefix+egressOwner(procid.Self(), here)+"-3", false)
	foreign := mk(egressDirPrefix+egressOwner(dead, "another")+"-4", false)
	older := mk(egressDirPrefix+"12345", false)
	crowded := mk(egressDirPrefix+egressOwner(dead, here)+"-5", true)

	sweepEgressDirs(slog.New(slog.DiscardHandler))

	var left []string
	ents, _ := os.ReadDir(base)
	for _, e := range ents {
		left = append(left, e.Name())
	}
	for _, name := range []string{gone, goneNoSpace, goneUnrenamed} {
		if slices.Contains(left, name) {
			t.Errorf("a dead broker's %s was left", name)
		}
	}
	for _, name := range []string{live, foreign, older, crowded} {
		if !slices.Contains(left, name) {
			t.Errorf("%s was removed", name)
		}
	}
	if _, err := os.Stat(filepath.Join(base, crowded, "other")); err != nil {
		t.Errorf("the sweep removed what else a directory held: %v", err)
	}
}

// egressDirPattern's names fit a Unix socket's path in /dev/shm with room
// to spare, and egressDirOwner reads back what they name.
func TestEgressDirName(t *testing.T) {
	dir, err := os.MkdirTemp(t.TempDir(), egressDirPattern())
	if err != nil {
		t.Fatal(err)
	}
	id, space, ok := egressDirOwner(filepath.Base(dir))
	if !ok || id != procid.Self() {
		t.Fatalf("egressDirOwner(%q) = %q, %q, %v", filepath.Base(dir), id, space, ok)
	}
	if n := len("/dev/shm/" + filepath.Base(dir) + "/proxy.sock"); n > 90 {
		t.Errorf("a socket path in /dev/shm is %d bytes long", n)
	}
}
