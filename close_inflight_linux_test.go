package airlock_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlockhq/airlock"
)

// ourCgroups are the cgroups this process's sandboxes made (named
// airlock-<pid>-...).
func ourCgroups() []string {
	var out []string
	pat := "airlock-" + strconv.Itoa(os.Getpid()) + "-*"
	filepath.Walk("/sys/fs/cgroup", func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.IsDir() {
			return nil
		}
		if ok, _ := filepath.Match(pat, fi.Name()); ok {
			out = append(out, p)
			return filepath.SkipDir
		}
		if strings.Count(strings.TrimPrefix(p, "/sys/fs/cgroup"), "/") > 4 {
			return filepath.SkipDir
		}
		return nil
	})
	return out
}

// ourChildren are the processes whose parent is this one.
func ourChildren() []string {
	var out []string
	me := strconv.Itoa(os.Getpid())
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 && f[1] == me {
			out = append(out, e.Name())
		}
	}
	return out
}

func treeNames(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && p != dir {
			out = append(out, strings.TrimPrefix(p, dir))
		}
		return nil
	})
	return out
}

// TestCloseWithCallsInFlightLeavesNothing: calls from many goroutines,
// each cancelled at a random moment (before it starts, while its sandbox
// is built, while it runs), and Close called from several goroutines while
// they are in flight: no call panics, each ends with a Result or
// ErrClosed, each Result has its audit record, and once Close returns no
// process, cgroup or placeholder of the session is left.
func TestCloseWithCallsInFlightLeavesNothing(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := treeNames(t, dir)
	records := t.TempDir()
	s, err := airlock.Open(&airlock.Options{Dir: dir, RecordsDir: records, AllowUnenforcedLimits: true})
	if err != nil {
		t.Skipf("no session here: %v", err)
	}
	if res, err := s.Call(context.Background(), "shell", map[string]any{"command": "true"}); err != nil || res.Class != "ok" {
		s.Close()
		t.Skipf("no sandbox here: %v %+v", err, res)
	}

	const workers = 12
	var wg sync.WaitGroup
	var mu sync.Mutex
	var calls []string
	started := make(chan struct{}, workers)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				ctx, cancel := context.WithCancel(context.Background())
				if rand.IntN(4) == 0 {
					cancel()
				} else {
					time.AfterFunc(time.Duration(rand.IntN(300))*time.Millisecond, cancel)
				}
				args := map[string]any{"command": "sleep 30"}
				tool := "shell"
				if i%3 == 0 {
					tool, args = "read_file", map[string]any{"path": "a.txt"}
				} else if i%3 == 1 {
					tool, args = "write_file", map[string]any{"path": "w" + strconv.Itoa(i) + ".txt", "content": "x"}
				}
				if n == 2 {
					started <- struct{}{}
				}
				res, err := s.Call(ctx, tool, args)
				cancel()
				if errors.Is(err, airlock.ErrClosed) {
					return
				}
				if err != nil || res == nil {
					t.Errorf("%s: %v %+v", tool, err, res)
					return
				}
				mu.Lock()
				calls = append(calls, res.CallID)
				mu.Unlock()
			}
		}()
	}
	for range workers {
		<-started
	}
	var cw sync.WaitGroup
	for range 3 {
		cw.Add(1)
		go func() { defer cw.Done(); s.Close() }()
	}
	cw.Wait()
	wg.Wait()
	// Close waits for this session's sandboxes; another test's hands may
	// still be tearing theirs down, so what is left is looked at until it
	// is gone, or for a generous bound.
	var cgroups, children []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		cgroups, children = ourCgroups(), ourChildren()
		if len(cgroups)+len(children) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(cgroups) > 0 {
		t.Errorf("cgroups left after Close: %v", cgroups)
	}
	if len(children) > 0 {
		t.Errorf("processes left after Close: %v", children)
	}
	// Every call that returned a Result has its record, however it ended.
	log, err := os.ReadFile(filepath.Join(records, s.ID(), "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range calls {
		if !strings.Contains(string(log), `"call_id":"`+id+`"`) {
			t.Errorf("call %s returned a Result but has no audit record", id)
		}
	}
	after := slicesWithout(treeNames(t, dir), func(n string) bool { return strings.HasPrefix(n, "/w") && strings.HasSuffix(n, ".txt") })
	if strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("the tree after Close:\n%s\nbefore:\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
	}
}

func slicesWithout(list []string, drop func(string) bool) []string {
	var out []string
	for _, s := range list {
		if !drop(s) {
			out = append(out, s)
		}
	}
	return out
}
