package grant

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const intersectGrant = `
[paths]
read_write = ["ws"]
read_only = ["ro"]
deny = ["ws/secrets"]
[network]
hosts = ["api.github.com"]
[limits]
time = "60s"
memory = "512MiB"
[secrets.TOKEN]
from = "env:TOKEN"
tools = ["http_fetch"]
hosts = ["api.github.com"]
`

func TestIntersectGivesOnlyWhatIsAsked(t *testing.T) {
	T := fixture(t, "ws/sub/f", "ws/secrets/key", "ws/other/f", "ro/f", "outside/f")
	g := mustParse(t, T, intersectGrant)
	n, missing, err := g.Intersect(T+"/ws", Ask{ReadWrite: []string{"sub"}, ReadOnly: []string{T + "/ro"}, Hosts: []string{"api.github.com"}, Tools: []string{"read_file", "http_fetch"}, Limits: Limits{Time: 30 * time.Second}})
	if err != nil || len(missing) > 0 {
		t.Fatalf("Intersect: %v %v", err, missing)
	}
	for _, tc := range []struct {
		path  string
		write bool
		ok    bool
	}{
		{T + "/ws/sub/f", true, true},
		{T + "/ro/f", false, true},
		{T + "/ro/f", true, false},
		{T + "/ws/other/f", false, false}, // granted to the user, not asked for
		{T + "/ws/secrets/key", false, false},
		{T + "/outside/f", false, false},
	} {
		if d := n.CheckPath(tc.path, tc.write); d.Allowed != tc.ok {
			t.Errorf("CheckPath(%s, write=%v) = %v (%s), want %v", tc.path, tc.write, d.Allowed, d.Reason, tc.ok)
		}
	}
	if diff := cmp.Diff([]string{"read_file", "http_fetch"}, n.EnabledTools()); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if l := n.LimitsFor("read_file"); l.Time != 30*time.Second || l.Memory != 512<<20 {
		t.Errorf("limits %s, want the asked time and the grant's memory", l)
	}
	if s := n.Secrets(); len(s) != 1 || s[0].Name != "TOKEN" {
		t.Errorf("secrets %v, want TOKEN kept for http_fetch", s)
	}
	// A narrowed grant without http_fetch keeps no secret.
	n2, _, _ := g.Intersect(T+"/ws", Ask{Tools: []string{"read_file"}})
	if s := n2.Secrets(); len(s) != 0 {
		t.Errorf("secrets %v, want none", s)
	}
	if n2.HasNetwork() {
		t.Error("a capsule that asks for no host got the network")
	}
}

func TestIntersectListsWhatIsMissing(t *testing.T) {
	T := fixture(t, "ws/f", "ro/f", "outside/f")
	g := mustParse(t, T, intersectGrant)
	_, missing, err := g.Intersect(T, Ask{
		ReadWrite: []string{"ro", "ws"},
		ReadOnly:  []string{"outside"},
		Hosts:     []string{"evil.example.com", "api.github.com"},
		Tools:     []string{"read_file", "nosuch"},
		Limits:    Limits{Time: time.Hour, Memory: 2 << 30},
	})
	if err != nil {
		t.Fatal(err)
	}
	var fixes []string
	for _, m := range missing {
		fixes = append(fixes, m.Fix)
	}
	want := []string{"--rw " + T + "/ro", "--ro " + T + "/outside", "--allow-host evil.example.com", `"nosuch" in the grant's [tools] enabled list`, "--time 1h0m0s", "--memory 2GiB"}
	if diff := cmp.Diff(want, fixes); diff != "" {
		t.Errorf("fixes (-want +got):\n%s", diff)
	}
}

func TestWasmTools(t *testing.T) {
	T := fixture(t, "ws/f", "data/f", "outside/f")
	g := mustParse(t, T, `
[paths]
read_write = ["ws"]
read_only = ["data"]
[tools.wasm.upper]
module = "upper.wasm"
sha256 = "`+strings.Repeat("ab", 32)+`"
description = "Upper-cases text."
schema = '{"type":"object","properties":{"text":{"type":"string"}}}'
read_only = ["data"]
time = "5s"
`)
	w, ok := g.WasmTool("upper")
	if !ok || !g.ToolEnabled("upper") {
		t.Fatalf("the wasm tool is not there: %v", g.WasmTools())
	}
	if w.Module != T+"/upper.wasm" || w.Limits.Time != 5*time.Second || len(w.ReadOnly) != 1 || w.ReadOnly[0] != T+"/data" {
		t.Errorf("wasm tool %+v", w)
	}
	if d := g.Check(Call{Tool: "upper"}); !d.Allowed {
		t.Errorf("a call of the wasm tool is refused: %s", d.Reason)
	}
	// Carried through With.
	if w2, err := g.With(T+"/ws", Flags{}); err != nil || !w2.ToolEnabled("upper") {
		t.Errorf("With lost the wasm tool: %v", err)
	}
	for _, tc := range []struct{ toml, want string }{
		{`[tools.wasm.grep]
module = "m.wasm"
sha256 = "` + strings.Repeat("0", 64) + `"
description = "x"`, "built-in tool"},
		{`[tools.wasm.t]
module = "m.wasm"
sha256 = "nothex"
description = "x"`, "64 hex digits"},
		{`[tools.wasm.t]
module = "m.wasm"
sha256 = "` + strings.Repeat("0", 64) + `"
description = "x"
schema = '[1]'`, "JSON object"},
		{`[tools.wasm.t]
module = "m.wasm"
sha256 = "` + strings.Repeat("0", 64) + `"
description = "x"
read_only = ["outside"]`, "outside every granted path"},
		{`[tools.wasm.t]
module = "m.wasm"
sha256 = "` + strings.Repeat("0", 64) + `"
description = "x"
network = true`, "unknown key"},
	} {
		_, err := Parse([]byte("[paths]\nread_write = [\"ws\"]\n"+tc.toml), "grant.toml", T)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.toml, err, tc.want)
		}
	}
}

// TestIntersectNeverGivesMoreThanTheGrant: whatever a capsule asks, its
// grant lets no path be read or written that the user's grant does not.
// Intersect rebuilt the paths from the ask alone, so a capsule asking for
// "." read-write got the directories the user had granted read-only inside
// it writable, through the native sandbox's shell too (red team).
func TestIntersectNeverGivesMoreThanTheGrant(t *testing.T) {
	T := fixture(t, "ws/f", "ws/sub/f", "ws/sub/w/f", "ws/sub/x/f", "ws/pinned.txt", "ws/secrets/key", "ws/.git/hooks/pre-commit", "ws/deep/.git/config", "ro/f", "ro/rw/f")
	g := mustParse(t, T, `
[paths]
read_write = ["ws", "ws/sub/w", "ro/rw"]
read_only = ["ws/sub", "ws/pinned.txt", "ro"]
deny = ["ws/secrets"]
[tools]
enabled = ["read_file", "write_file", "shell"]
`)
	var paths []string
	filepath.WalkDir(T, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			paths = append(paths, p)
			if d.IsDir() {
				paths = append(paths, filepath.Join(p, "new"))
			}
		}
		return nil
	})
	for _, ask := range []Ask{
		{ReadWrite: []string{"."}},
		{ReadWrite: []string{T + "/ws/sub/w"}},
		{ReadWrite: []string{"."}, ReadOnly: []string{"sub/w"}},
		{ReadWrite: []string{"deep"}},
		{ReadOnly: []string{".", T + "/ro"}},
		{ReadOnly: []string{T + "/ro"}, ReadWrite: []string{T + "/ro/rw"}},
	} {
		n, missing, err := g.Intersect(T+"/ws", ask)
		if err != nil || len(missing) > 0 {
			t.Fatalf("Intersect(%+v): %v %v", ask, err, missing)
		}
		for _, p := range paths {
			for _, write := range []bool{false, true} {
				if d := n.CheckPath(p, write); d.Allowed && !g.CheckPath(p, write).Allowed {
					t.Errorf("ask %+v: the capsule may %s %s (%s), which the grant does not allow: %s", ask, verb(write), p, d.Rule, g.CheckPath(p, write).Reason)
				}
			}
		}
	}
	// What the user grants inside what is asked is kept, not lost.
	n, _, _ := g.Intersect(T+"/ws", Ask{ReadWrite: []string{"."}})
	for _, tc := range []struct {
		path  string
		write bool
		ok    bool
	}{
		{T + "/ws/f", true, true},
		{T + "/ws/sub/f", false, true},
		{T + "/ws/sub/f", true, false},
		{T + "/ws/sub/w/f", true, true},
		{T + "/ws/pinned.txt", true, false},
		{T + "/ws/secrets/key", false, false},
		{T + "/ws/.git/hooks/pre-commit", true, false},
		{T + "/ro/f", false, false},
	} {
		if d := n.CheckPath(tc.path, tc.write); d.Allowed != tc.ok {
			t.Errorf("CheckPath(%s, write=%v) = %v (%s), want %v", tc.path, tc.write, d.Allowed, d.Reason, tc.ok)
		}
	}
}

func verb(write bool) string {
	if write {
		return "write"
	}
	return "read"
}
