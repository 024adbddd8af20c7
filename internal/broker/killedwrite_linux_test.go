package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandboxtest"
	"github.com/airlockhq/airlock/internal/writetmp"
	"github.com/airlockhq/airlock/tool"
	"github.com/airlockhq/airlock/wire"
)

// bigContent is what the killed broker writes: large enough that the kill
// finds a write in progress.
var bigContent = strings.Repeat("new content\n", 8<<20/12)

// TestKilledBrokerLeavesNoTemporaryFile (red team, repro 12): kill -9 of a
// broker while its sandbox runs write_file leaves no temporary file in the
// user's tree, neither at once (the sandbox writes to an unnamed file,
// freed with it; only a kill in the two system calls between naming it and
// renaming it over the file leaves its name, with the call's tag) nor after
// the next start over the same records directory.
// That start removes a temporary file named with the killed call's tag in
// the directory its in-flight record journals (what the named fallback
// would leave), and nothing else: not a symlink or a directory with such a
// name, nor a file of another call.
func TestKilledBrokerLeavesNoTemporaryFile(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	sandboxtest.Native(t) // skip where there is no sandbox
	if err := os.WriteFile(filepath.Join(f.ws, "f.txt"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var dev uint64
	if fi, err := os.Stat(f.ws); err == nil {
		dev = fi.Sys().(*syscall.Stat_t).Dev
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledBrokerHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "AIRLOCK_KILLED_BROKER_WS="+f.ws, "AIRLOCK_KILLED_BROKER_RECORDS="+f.records)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill the broker while a process of its sandbox has a temporary file
	// of the tree open.
	var writer int
	deadline := time.Now().Add(2 * time.Minute) // only for a broker that never writes
	for writer == 0 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the broker's sandbox never started writing")
		}
		writer = writingProcess(cmd.Process.Pid, dev)
		time.Sleep(time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	t.Logf("killed the broker (pid %d) while its sandbox's process %d was writing", cmd.Process.Pid, writer)
	for deadline := time.Now().Add(time.Minute); alive(writer); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the sandbox process %d outlived its broker", writer)
		}
	}
	live, err := audit.InFlightUnder(f.records)
	if err != nil || len(live) != 1 {
		t.Fatalf("calls in flight of the killed broker: %+v, %v; want one", live, err)
	}
	fl := live[0]
	if fl.Kind != audit.KindCall || len(fl.Dirs) != 1 || fl.Dirs[0] != f.ws {
		t.Fatalf("the in-flight record: %+v; want a call with the tree's directory journalled", fl)
	}
	tag := writetmp.Tag(fl.CallID)
	// The content is written unnamed; replacing f.txt, which exists,
	// names it for the two system calls before the rename (tool/replace.go),
	// and a kill that lands between them leaves that name, of the killed
	// call's tag, for the next start to remove (checked below). Nothing
	// else may be left.
	left := temporaryFiles(t, f.ws)
	for _, name := range left {
		if !writetmp.Matches(name, tag) {
			t.Errorf("temporary file left by the killed broker: %q (the call in flight has tag %s)", name, tag)
		}
	}
	if len(left) > 1 {
		t.Errorf("temporary files left by the killed broker: %q; want at most the one named before its rename", left)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "f.txt")); string(b) != "old\n" && string(b) != bigContent {
		t.Errorf("f.txt holds %d bytes, neither the old content nor all of the new", len(b))
	}

	// What the named fallback would have left, and look-alikes.
	leftover := writetmp.Name("f.txt", tag)
	plant := map[string]string{
		leftover: "file",
		".f.txt.airlock-ffeeddccbbaa9988-00000000.tmp": "file",
		".g.airlock-" + tag + "-11111111.tmp":          "symlink",
		".d.airlock-" + tag + "-22222222.tmp":          "dir",
	}
	for name, kind := range plant {
		p := filepath.Join(f.ws, name)
		var err error
		switch kind {
		case "file":
			err = os.WriteFile(p, []byte("x"), 0o644)
		case "symlink":
			err = os.Symlink("f.txt", p)
		case "dir":
			err = os.Mkdir(p, 0o755)
		}
		if err != nil {
			t.Fatal(err)
		}
	}

	// The next start over the same records directory.
	f.open(t, sandboxtest.Native(t), nil)
	for name := range plant {
		_, err := os.Lstat(filepath.Join(f.ws, name))
		if gone := os.IsNotExist(err); gone != (name == leftover) {
			t.Errorf("after the next start %s is gone: %v; want %v", name, gone, name == leftover)
		}
	}
	for _, name := range left {
		if _, err := os.Lstat(filepath.Join(f.ws, name)); !os.IsNotExist(err) {
			t.Errorf("after the next start the killed call's %s is still there: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(f.ws, "f.txt")); err != nil {
		t.Error(err)
	}
	var interrupted bool
	for _, r := range records(t, f.records) {
		interrupted = interrupted || r.CallID == fl.CallID && r.Class == audit.ClassInterrupted
	}
	if !interrupted {
		t.Errorf("no interrupted record for %s", fl.CallID)
	}
}

// TestKilledBrokerHelper is the broker TestKilledBrokerLeavesNoTemporaryFile
// kills: it writes until then.
func TestKilledBrokerHelper(t *testing.T) {
	ws := os.Getenv("AIRLOCK_KILLED_BROKER_WS")
	if ws == "" {
		t.Skip("runs only as the broker TestKilledBrokerLeavesNoTemporaryFile kills")
	}
	g, err := grant.FromFlags(ws, grant.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := broker.Open(&broker.Options{Grant: g, Backend: sandboxtest.Native(t), RecordsDir: os.Getenv("AIRLOCK_KILLED_BROKER_RECORDS")})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		for _, path := range []string{"f.txt", fmt.Sprintf("new%d.txt", i)} {
			args, _ := json.Marshal(map[string]string{"path": path, "content": bigContent})
			if res := call(t, s, "write_file", string(args)); res.Class != broker.ClassOK || res.Output.IsError {
				t.Fatalf("write_file: %s %q", res.Class, res.Output.Content)
			}
		}
	}
}

// writingProcess returns a process, pid or one of its descendants, that
// has a temporary file being written open on the device dev (an unnamed
// one, "…/#INODE (deleted)", or one named .NAME.airlock-…), or 0.
func writingProcess(pid int, dev uint64) int {
	for _, p := range descendants(pid) {
		fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", p))
		for _, fd := range fds {
			l, err := os.Readlink(fd)
			if err != nil || !(strings.Contains(l, "/#") && strings.HasSuffix(l, " (deleted)") || strings.Contains(l, ".airlock-")) {
				continue
			}
			// Not empty: the broker holds empty unnamed files of its own
			// (the warm pool's spare placeholders).
			if fi, err := os.Stat(fd); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 && fi.Sys().(*syscall.Stat_t).Dev == dev {
				return p
			}
		}
	}
	return 0
}

// descendants returns pid and every process below it.
func descendants(pid int) []int {
	children := map[int][]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		p, _ := strconv.Atoi(filepath.Base(filepath.Dir(st)))
		if len(fields) > 1 {
			pp, _ := strconv.Atoi(fields[1])
			children[pp] = append(children[pp], p)
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z"
}

// temporaryFiles lists the names in dir that look like temporary files.
func temporaryFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range ents {
		if strings.Contains(e.Name(), ".airlock-") || strings.HasPrefix(e.Name(), "#") {
			left = append(left, e.Name())
		}
	}
	return left
}

// leavingBackend is a runner killed mid-write by a limit: it leaves the
// temporary file the named fallback makes (writetmp.Name, with the call's
// tag) beside the file the call writes, and reports the time limit.
type leavingBackend struct{ left chan string }

func (b *leavingBackend) Report() sandbox.Report { return sandbox.Report{Backend: "leaving"} }

func (b *leavingBackend) Run(_ context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	frame, err := wire.ReadFrame(spec.Stdin)
	if err != nil {
		return nil, err
	}
	var in wire.ToolInput
	var args tool.WriteFileArgs
	if err := json.Unmarshal(frame, &in); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(in.Args, &args); err != nil {
		return nil, err
	}
	p := filepath.Join(filepath.Dir(args.Path), writetmp.Name(filepath.Base(args.Path), writetmp.Tag(in.Context.CallID)))
	if err := os.WriteFile(p, []byte("half"), 0o644); err != nil {
		return nil, err
	}
	b.left <- p
	return &sandbox.Result{Limit: wire.LimitTime, ExitCode: -1, Signal: int(syscall.SIGKILL)}, nil
}

// TestKilledCallTemporaryFileRemoved: a write_file call a limit ended
// (its runner killed mid-write) leaves no temporary file once the call
// returns, though its broker lives on: the broker removes the files named
// with the call's tag in the directory it may write, and no other.
func TestKilledCallTemporaryFileRemoved(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	b := &leavingBackend{left: make(chan string, 1)}
	s := f.open(t, b, func(o *broker.Options) { o.Pool = -1 })
	other := filepath.Join(f.ws, ".f.txt.airlock-ffeeddccbbaa9988-00000000.tmp")
	if err := os.WriteFile(other, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := call(t, s, "write_file", `{"path":"`+filepath.Join(f.ws, "f.txt")+`","content":"new"}`)
	if res.Class != broker.ClassTimeout {
		t.Fatalf("class %s, want timeout: %q", res.Class, res.Output.Content)
	}
	if _, err := os.Lstat(<-b.left); !os.IsNotExist(err) {
		t.Errorf("the killed call's temporary file is still there (%v)", err)
	}
	if _, err := os.Lstat(other); err != nil {
		t.Errorf("another call's file was removed: %v", err)
	}
}
