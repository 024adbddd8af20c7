package podman

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestLiveTreeOwnerWrites: a tree owned by an ordinary user (as a project
// is, with the broker run as root) is read and written in the container as
// its owner would: a file written there belongs to the tree's owner on the
// host, not to host root, and the owner's files (mode 0644, 0755 dirs) can
// be changed. Files of another owner in the tree stay theirs.
func TestLiveTreeOwnerWrites(t *testing.T) {
	b := newLive(t)
	const uid, gid = 1234, 2345
	work := t.TempDir()
	if err := os.Chmod(work, 0o755); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(work, "mine.txt")
	if err := os.WriteFile(mine, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	roots := filepath.Join(work, "roots.txt")
	if err := os.WriteFile(roots, []byte("root's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{work, mine} {
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	spec := baseSpec(work)
	out, res := call(t, b, spec, "shell", map[string]any{"command": "echo new > mine.txt && mkdir d && echo hi > d/c.txt && echo ok; echo x >> roots.txt || echo refused"})
	if res.ExitCode != 0 || out.IsError || !strings.Contains(out.Content, "ok") || !strings.Contains(out.Content, "refused") {
		t.Fatalf("shell: exit %d, output %+v; want the owner's files written, root's refused", res.ExitCode, out)
	}
	for _, p := range []string{mine, filepath.Join(work, "d"), filepath.Join(work, "d", "c.txt")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != uid || st.Gid != gid {
			t.Errorf("%s is owned by %d:%d on the host, want the tree's owner %d:%d", p, st.Uid, st.Gid, uid, gid)
		}
	}
	if got, _ := os.ReadFile(roots); string(got) != "root's\n" {
		t.Errorf("roots.txt = %q: a file of host root in the tree was written", got)
	}
}

// TestOwnerMap: each owner's idmapping is one-to-one over the container's
// ids, gives the owner container root's host id and, inside the range,
// host root the owner's.
func TestOwnerMap(t *testing.T) {
	const count = IDCount
	for _, owner := range []uint32{0, 1, 2, 1000, count - 2, count - 1, count, 1 << 20} {
		maps := ownerMap(owner, count)
		inside, host := map[int]int{}, map[int]bool{}
		total := 0
		for _, m := range maps {
			if m.Size <= 0 {
				t.Fatalf("owner %d: empty extent %+v", owner, m)
			}
			for i := range m.Size {
				if _, dup := inside[m.ContainerID+i]; dup || host[m.HostID+i] {
					t.Fatalf("owner %d: id %d or host id %d mapped twice in %+v", owner, m.ContainerID+i, m.HostID+i, maps)
				}
				inside[m.ContainerID+i] = m.HostID + i
				host[m.HostID+i] = true
				if m.HostID+i < IDBase || m.HostID+i >= IDBase+count {
					t.Fatalf("owner %d: host id %d outside the container's ids", owner, m.HostID+i)
				}
			}
			total += m.Size
		}
		if total != count {
			t.Errorf("owner %d: %d ids mapped, want %d", owner, total, count)
		}
		if inside[int(owner)] != IDBase {
			t.Errorf("owner %d shows as host id %d, want container root's %d", owner, inside[int(owner)], IDBase)
		}
		if owner < count {
			if got := inside[0]; got != IDBase+int(owner) {
				t.Errorf("owner %d: host root shows as host id %d, want %d", owner, got, IDBase+int(owner))
			}
		} else if _, ok := inside[0]; ok {
			t.Errorf("owner %d: host root is mapped", owner)
		}
	}
}
