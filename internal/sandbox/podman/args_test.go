package podman

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const testImage = "localhost/tools@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func baseInvocation() *Invocation {
	return &Invocation{
		Runtime: "runc", HooksDir: "/state/airlock-podman-1/hooks", Name: "airlock-42-1", Broker: "42:1000", Image: testImage,
		Exe: "/state/airlock-podman-1/call-1/1",
		Binds: []Bind{
			{Source: "/state/airlock-podman-1/call-1/2", Target: "/home/u/proj", Writable: true},
			{Source: "/state/airlock-podman-1/call-1/3", Target: "/home/u/proj/.git", Writable: true},
			{Source: "/state/airlock-podman-1/call-1/4", Target: "/home/u/proj/.git/hooks"},
		},
		Wall: 30 * time.Second, MemoryBytes: 1 << 30, Pids: 256, FileBytes: 1 << 30, TmpBytes: 64 << 20, OpenFiles: 1024,
		Cwd: "/home/u/proj",
	}
}

// TestArgsGolden pins the argument list Podman receives, so any change to
// the container's isolation flags shows in review (-update rewrites).
func TestArgsGolden(t *testing.T) {
	egress := baseInvocation()
	egress.ProxySocket, egress.ProxyPort = "/state/airlock-podman-1/call-1/5", 3128
	command := baseInvocation()
	command.Command = []string{"make", "test"}
	for _, tc := range []struct {
		name string
		inv  *Invocation
	}{{"tool", baseInvocation()}, {"egress", egress}, {"command", command}} {
		t.Run(tc.name, func(t *testing.T) {
			args, err := Args(tc.inv)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(args, "\n") + "\n"
			path := filepath.Join("testdata", "args_"+tc.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if got != string(want) {
				t.Errorf("podman arguments changed; if on purpose, run go test -update and review testdata:\n got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestArgsRefuseUnsafePaths: a path Podman's --mount syntax would split
// is refused, naming the path.
func TestArgsRefuseUnsafePaths(t *testing.T) {
	for _, bad := range []string{"/home/u/a,b", "/home/u/a:b", "/home/u/a,ro"} {
		inv := baseInvocation()
		inv.Binds = append(inv.Binds, Bind{Source: "/state/x", Target: bad, Writable: true})
		_, err := Args(inv)
		var me *MountPathError
		if !errors.As(err, &me) || me.Path != bad || !strings.Contains(err.Error(), "':' or ','") {
			t.Errorf("Args with target %q: err = %v, want a MountPathError naming it", bad, err)
		}
	}
	inv := baseInvocation()
	inv.Cwd = "/home/u/a,b"
	if _, err := Args(inv); err == nil {
		t.Error("Args accepted a cwd with a comma")
	}
}

func TestPodmanFailed(t *testing.T) {
	for _, tc := range []struct {
		code   int
		tool   bool
		stderr string
		want   bool
	}{
		{125, false, "", true},
		{126, true, "", true},
		{127, true, "", true},
		{127, false, "sh: nope: not found\n", false},
		{127, false, "Error: runc: exec failed\n", true},
		{137, true, "", false},
		{0, true, "", false},
		{64, true, "", false},
	} {
		if got := podmanFailed(tc.code, tc.tool, []byte(tc.stderr)); got != tc.want {
			t.Errorf("podmanFailed(%d, %v, %q) = %v, want %v", tc.code, tc.tool, tc.stderr, got, tc.want)
		}
	}
}
