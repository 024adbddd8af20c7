package egress_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/egress/forward"
)

// nestedForwarderEnv, set to a proxy socket's path, makes the test binary
// the forwarder alone (see TestMain): as a sandbox's init runs it.
const nestedForwarderEnv = "EGRESS_NESTED_FORWARDER"

func TestMain(m *testing.M) {
	if sock := os.Getenv(nestedForwarderEnv); sock != "" {
		os.Exit(runNestedForwarder(sock))
	}
	os.Exit(m.Run())
}

// runNestedForwarder serves the forwarder on a fresh 127.0.0.1 port, which
// it prints, until its stdin closes.
func runNestedForwarder(sock string) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(l.Addr().String())
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	if err := forward.Forward(ctx, l, sock); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// nestedForwarder starts the forwarder to the proxy socket sock in a child
// process that is PID 1 of a new PID namespace (and a new user namespace
// when not root), as a native sandbox's init is, and returns its address.
func nestedForwarder(t testing.TB, sock string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), nestedForwarderEnv+"="+sock)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() != 0 {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}}
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start a process in a new PID namespace here: %v", err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the nested forwarder did not start: %v", err)
	}
	return strings.TrimSpace(addr)
}

// nestedStack is stack with the forwarder as PID 1 of a PID namespace of
// its own.
func nestedStack(t testing.TB, opts *egress.Options) string {
	return nestedForwarder(t, serveProxy(t, opts))
}

// splicePipes runs one 1 MiB-and-more transfer to a sink through the
// connection dial makes to the proxy (given the sink's port, and set up
// before the count starts), and returns how many pipe descriptors this
// process opened while it was in flight: each direction of a relay that
// splices holds one pipe (two descriptors) while it runs or waits; a relay
// through a buffer holds none. It waits up to wait for the second pipe: on
// a loaded machine the copy the other way may not have started yet when
// the first megabyte is through.
func splicePipes(t *testing.T, dial func(port int) func() (net.Conn, error), wait time.Duration) int {
	var before int
	during := make(chan int, 1)
	port, _ := tcpServer(t, func(c net.Conn) {
		defer c.Close()
		io.CopyN(io.Discard, c, 1<<20)
		n := countFDs(t, "pipe:")
		for deadline := time.Now().Add(wait); n-before < 4 && time.Now().Before(deadline); n = countFDs(t, "pipe:") {
			time.Sleep(5 * time.Millisecond)
		}
		during <- n - before
		io.Copy(io.Discard, c)
	})
	connect := dial(port)
	before = countFDs(t, "pipe:")
	c, err := connect()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if rep := socksConnect(t, c, "fixture.test", port); rep != 0 {
		t.Fatalf("REP %#x", rep)
	}
	go func() {
		buf := make([]byte, 64<<10)
		for i := 0; i < 64; i++ {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	return <-during
}

// dialTCP is a dial for splicePipes: to the forwarder stack returns.
func dialTCP(stack func(port int) string) func(port int) func() (net.Conn, error) {
	return func(port int) func() (net.Conn, error) {
		addr := stack(port)
		return func() (net.Conn, error) { return net.Dial("tcp", addr) }
	}
}

// TestHandoffFromSandboxInitSpliced: a connection handed over by a
// forwarder that is PID 1 of a PID namespace below the proxy's (as a native
// sandbox's init is) is the proxy's alone, and its relay splices both ways.
func TestHandoffFromSandboxInitSpliced(t *testing.T) {
	if !inChild(t, "splice pipes:") {
		return
	}
	n := splicePipes(t, dialTCP(func(port int) string {
		return nestedStack(t, &egress.Options{Policy: loopbackPolicy{port: port}, Resolver: fixtureResolver{}})
	}), 10*time.Second)
	t.Logf("splice pipes: %d descriptors", n)
	if n < 4 {
		t.Fatalf("%d pipe descriptors appeared during a transfer handed over by a sandbox's init, want 4: the relay copies instead of splicing", n)
	}
}

// TestHandoffFromOtherProcessBuffered: a connection handed over by any
// other process (here the test's own, as a payload that dials the proxy's
// socket and sends a socket of its own would) may have another descriptor
// whose holder can make it blocking, so neither direction of its relay
// splices: both copy through a buffer.
func TestHandoffFromOtherProcessBuffered(t *testing.T) {
	if !inChild(t, "splice pipes:") {
		return
	}
	// (A relay that copies makes no pipe, early or late: a short wait
	// for one is enough.)
	n := splicePipes(t, dialTCP(func(port int) string {
		return stack(t, &egress.Options{Policy: loopbackPolicy{port: port}, Resolver: fixtureResolver{}})
	}), 2*time.Second)
	t.Logf("splice pipes: %d descriptors", n)
	if n != 0 {
		t.Fatalf("%d pipe descriptors appeared during a transfer handed over by a process that is no sandbox's init, want 0: the relay splices a socket another process holds", n)
	}
}
