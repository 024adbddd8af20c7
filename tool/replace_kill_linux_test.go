package tool

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/writetmp"
)

// killedCall is the call id of the writes TestKilledWriteLeavesNothing kills.
const killedCall = "call_00112233445566ff"

// TestKilledWriteLeavesNothing (red team, repro 12): a write_file killed
// mid-write (SIGKILL of the process writing, as when its broker is killed)
// leaves no temporary file: the content goes to an unnamed file
// (O_TMPFILE), which the kernel frees with the process, and a new file is
// linked straight to its name. Where the file is made by name instead (a
// file system without O_TMPFILE), the name carries the call's tag and
// writetmp.Sweep removes it. The old file is never half written: it holds
// the old content or all of the new.
func TestKilledWriteLeavesNothing(t *testing.T) {
	for _, named := range []bool{false, true} {
		t.Run(map[bool]string{false: "unnamed", true: "named"}[named], func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("old\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWriteHelper$", "-test.count=1")
			cmd.Env = append(os.Environ(), "AIRLOCK_KILLED_WRITE_DIR="+dir, "AIRLOCK_KILLED_WRITE_NAMED="+strconv.FormatBool(named))
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Kill it while it has a temporary file open in dir.
			deadline := time.Now().Add(time.Minute) // only for a helper that never writes
			for !writing(cmd.Process.Pid, dir) {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatal("the helper never started writing")
				}
				time.Sleep(time.Millisecond)
			}
			cmd.Process.Kill()
			cmd.Wait()

			left := temporaries(t, dir)
			if !named && len(left) > 0 {
				t.Errorf("temporary files left by the killed write: %q", left)
			}
			t.Logf("left by the killed write: %q", left)
			if b, _ := os.ReadFile(filepath.Join(dir, "f.txt")); string(b) != "old\n" && string(b) != killedContent {
				t.Errorf("f.txt holds %d bytes, neither the old content nor all of the new", len(b))
			}
			news, _ := filepath.Glob(filepath.Join(dir, "new*.txt"))
			for _, p := range news {
				if b, _ := os.ReadFile(p); string(b) != killedContent {
					t.Errorf("%s holds %d bytes, not all of the new content", p, len(b))
				}
			}
			if _, err := writetmp.Sweep(dir, writetmp.Tag(killedCall)); err != nil {
				t.Fatal(err)
			}
			if left := temporaries(t, dir); len(left) > 0 {
				t.Errorf("temporary files left after the sweep: %q", left)
			}
		})
	}
}

// killedContent is what the helper writes: large enough that a kill finds
// it mid-write.
var killedContent = strings.Repeat("new content\n", 4<<20/12)

// TestKilledWriteHelper writes until it is killed.
func TestKilledWriteHelper(t *testing.T) {
	dir := os.Getenv("AIRLOCK_KILLED_WRITE_DIR")
	if dir == "" {
		t.Skip("runs only as the helper of TestKilledWriteLeavesNothing")
	}
	tryUnnamed = os.Getenv("AIRLOCK_KILLED_WRITE_NAMED") != "true"
	env := Env{Root: dir, Cwd: dir, CallID: killedCall}
	for i := 0; ; i++ {
		for _, path := range []string{"f.txt", fmt.Sprintf("new%d.txt", i)} {
			if out := call(t, env, "write_file", fmt.Sprintf(`{"path":%q,"content":%q}`, path, killedContent)); out.IsError {
				t.Fatal(out.Content)
			}
		}
	}
}

// writing reports whether process pid has a temporary file of dir open: an
// unnamed one ("DIR/#INODE (deleted)") or a named one.
func writing(pid int, dir string) bool {
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	for _, fd := range fds {
		l, err := os.Readlink(fd)
		if err != nil {
			continue
		}
		if name, ok := strings.CutPrefix(l, dir+"/"); ok && (strings.HasPrefix(name, "#") || strings.Contains(name, ".airlock-")) {
			return true
		}
	}
	return false
}

// temporaries lists dir's names that look like temporary files.
func temporaries(t *testing.T, dir string) []string {
	t.Helper()
	var left []string
	for _, n := range names(t, dir) {
		if strings.Contains(n, ".airlock-") || strings.HasPrefix(n, "#") {
			left = append(left, n)
		}
	}
	return left
}

// TestSweepTakesOnlyTheCallsFiles: a sweep removes the regular files named
// with the call's tag and nothing else in the directory: not files of
// another tag or of the older pattern, not a symlink or a directory named
// with the tag (nor what the symlink names), not a name without the dot,
// and nothing through a symlinked directory.
func TestSweepTakesOnlyTheCallsFiles(t *testing.T) {
	dir := t.TempDir()
	tag := writetmp.Tag(killedCall)
	write := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("user's\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ours := writetmp.Name("f.txt", tag)
	write(ours)
	keep := []string{
		"f.txt",
		".f.txt.airlock-ffeeddccbbaa9988-00000000.tmp", // another call's
		".f.txt.airlock-0123456789abcdef.tmp",          // the older pattern
		"f.txt.airlock-" + tag + "-00000000.tmp",       // no leading dot
		".f.txt.airlock-" + tag + "-0000000.tmp",       // seven digits
		"precious",
	}
	for _, n := range keep {
		write(n)
	}
	link := ".g.airlock-" + tag + "-11111111.tmp"
	if err := os.Symlink("precious", filepath.Join(dir, link)); err != nil {
		t.Fatal(err)
	}
	sub := ".d.airlock-" + tag + "-22222222.tmp"
	if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
		t.Fatal(err)
	}
	keep = append(keep, link, sub)
	// Through a symlinked directory: nothing.
	via := filepath.Join(t.TempDir(), "via")
	if err := os.Symlink(dir, via); err != nil {
		t.Fatal(err)
	}
	if n, err := writetmp.Sweep(via, tag); n != 0 || err == nil {
		t.Errorf("a sweep through a symlinked directory removed %d (%v); want none and an error", n, err)
	}
	n, err := writetmp.Sweep(dir, tag)
	if err != nil || n != 1 {
		t.Errorf("Sweep = %d, %v; want 1 removed", n, err)
	}
	got := names(t, dir)
	slices.Sort(keep)
	if !slices.Equal(got, keep) {
		t.Errorf("left %q\nwant %q", got, keep)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "precious")); string(b) != "user's\n" {
		t.Errorf("precious holds %q", b)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(dir, link), &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFLNK {
		t.Errorf("the symlink named with the tag: %v", err)
	}
}
