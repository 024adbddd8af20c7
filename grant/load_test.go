package grant

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// loadFixture is the tree the grants under testdata/load refer to.
var loadFixture = []string{
	"ws/file.txt", "ws/docs/readme", "ws/.git/HEAD", "ws/.git/hooks/", "ws/.vscode/settings.json", "ws/sub/x",
	"ws/vendor/lib/.git/config", "wslink -> $T/ws", "rootlink -> /",
}

// TestLoadGolden parses every testdata/load/*.toml against loadFixture and
// compares the errors (or the parsed grant's String) with the .golden file.
// Run with -update to rewrite them.
func TestLoadGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/load/*.toml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no grants under testdata/load: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".toml")
		t.Run(name, func(t *testing.T) {
			T := fixture(t, loadFixture...)
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			g, err := Parse(data, filepath.Base(file), T)
			switch {
			case err != nil:
				var e *Error
				if !errors.As(err, &e) {
					t.Errorf("error %v is not an *Error", err)
				}
				got = "ERROR\n" + err.Error() + "\n"
			default:
				got = "OK\n" + g.String()
				for _, r := range g.Risks() {
					got += "risk " + r + "\n"
				}
			}
			got = strings.ReplaceAll(got, T, "$T")
			golden := strings.TrimSuffix(file, ".toml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s mismatch (-want +got):\n%s", golden, diff)
			}
		})
	}
}

func TestLoadReadsRelativeToFile(t *testing.T) {
	T := fixture(t, "proj/ws/a", "proj/grant.toml")
	if err := os.WriteFile(T+"/proj/grant.toml", []byte("[paths]\nread_write = [\"ws\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := Load(T + "/proj/grant.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := []Mount{{Source: T + "/proj/ws", Writable: true, Dir: true}}
	if diff := cmp.Diff(want, g.Mounts()); diff != "" {
		t.Errorf("Mounts mismatch (-want +got):\n%s", diff)
	}
	if _, err := Load(T + "/proj/missing.toml"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want ErrNotExist", err)
	}
}

func TestLimitsFor(t *testing.T) {
	T := fixture(t, "ws/")
	g := mustParse(t, T, `
[limits]
memory = "2GiB"
[tools.shell]
time = "10m"
`)
	shell := DefaultLimits
	shell.Memory = 2 << 30
	other := shell
	shell.Time = 600e9
	if diff := cmp.Diff(shell, g.LimitsFor("shell")); diff != "" {
		t.Errorf("LimitsFor(shell) mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(other, g.LimitsFor("grep")); diff != "" {
		t.Errorf("LimitsFor(grep) mismatch (-want +got):\n%s", diff)
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64 // 0 means refused
	}{
		{"4096", 4096}, {"1B", 1}, {"512KB", 512000}, {"64MiB", 64 << 20}, {"1GiB", 1 << 30},
		{"2G", 2 << 30}, {"1TB", 1e12}, {" 8 MiB ", 8 << 20},
		{"", 0}, {"0", 0}, {"-1", 0}, {"+1", 0}, {"12XB", 0}, {"1.5GiB", 0}, {"MiB", 0},
		{"9999999999TiB", 0}, {"1e3", 0}, {"0x10", 0},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if got != tt.want || (err == nil) != (tt.want != 0) {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestFromFlags(t *testing.T) {
	T := fixture(t, "ws/a", "other/")
	g, err := Default(T + "/ws")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Mount{{Source: T + "/ws", Writable: true, Dir: true}}, g.Mounts()); diff != "" {
		t.Errorf("Default mounts mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(defaultTools(false, false), g.EnabledTools()); diff != "" {
		t.Errorf("Default tools mismatch (-want +got):\n%s", diff)
	}
	if g.ToolEnabled("http_fetch") {
		t.Errorf("Default enables http_fetch")
	}

	_, err = FromFlags(T+"/ws", Flags{ReadOnly: []string{"../other", "missing"}, AllowHosts: []string{"*"}, Limits: Limits{Memory: 1}})
	want := `flags: paths.read_only: cannot mount "missing" read-only: no such file or directory
flags: network.hosts: "*": a wildcard is allowed only as a whole first label, as in "*.example.com"
flags: limits.memory: 1B is outside 16MiB..1TiB`
	if err == nil || err.Error() != want {
		t.Errorf("FromFlags error:\n%v\nwant:\n%s", err, want)
	}

	g, err = FromFlags(T+"/ws", Flags{ReadOnly: []string{"../other"}, AllowHosts: []string{"a.test"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Mount{{Source: T + "/other", Dir: true}}, g.Mounts()); diff != "" {
		t.Errorf("FromFlags mounts mismatch (-want +got):\n%s", diff)
	}
	if !g.ToolEnabled("http_fetch") {
		t.Errorf("a grant with hosts does not enable http_fetch by default")
	}
}

func TestIDStable(t *testing.T) {
	T := fixture(t, "ws/")
	a := mustParse(t, T, "[paths]\nread_write = [\"ws\"]\n[network]\nhosts = [\"A.test\", \"b.test\"]\n")
	b := mustParse(t, T, "[network]\nhosts = [\"a.test.\", \"b.test\"]\n[paths]\nread_write = [\"$T/ws\"]\n")
	c := mustParse(t, T, "[paths]\nread_write = [\"ws\"]\n")
	if a.ID() != b.ID() {
		t.Errorf("equivalent grants have IDs %s and %s:\n%s\n%s", a.ID(), b.ID(), a, b)
	}
	if a.ID() == c.ID() {
		t.Errorf("different grants share ID %s", a.ID())
	}
}

func TestWith(t *testing.T) {
	T := fixture(t, "proj/ws/a", "proj/grant.toml", "other/b")
	file := "[paths]\nread_write = [\"ws\"]\n[network]\nhosts = [\"a.test\"]\n[limits]\ntime = \"1m\"\n[tools.shell]\nmemory = \"2GiB\"\n"
	base, err := Parse([]byte(file), "grant.toml", T+"/proj")
	if err != nil {
		t.Fatal(err)
	}
	g, err := base.With(T+"/other", Flags{ReadOnly: []string{"."}, AllowHosts: []string{"b.test"}, Limits: Limits{Time: 5e9}})
	if err != nil {
		t.Fatal(err)
	}
	wantMounts := []Mount{{Source: T + "/other", Dir: true}, {Source: T + "/proj/ws", Writable: true, Dir: true}}
	if diff := cmp.Diff(wantMounts, g.Mounts(), cmpSortMounts); diff != "" {
		t.Errorf("Mounts mismatch (-want +got):\n%s", diff)
	}
	for _, h := range []string{"a.test", "b.test"} {
		if _, ok := g.AllowHost(h, 443); !ok {
			t.Errorf("AllowHost(%s) refused", h)
		}
	}
	if got := g.LimitsFor("shell"); got.Time != 5e9 || got.Memory != 2<<30 {
		t.Errorf("LimitsFor(shell) = %v, want time 5s memory 2GiB", got)
	}
	if g.BaseDir() != T+"/other" {
		t.Errorf("BaseDir = %s, want %s/other", g.BaseDir(), T)
	}
	if _, ok := base.AllowHost("b.test", 443); ok {
		t.Errorf("With changed the original grant")
	}
	_, err = base.With(T, Flags{Deny: []string{"/etc"}})
	if want := `flags: paths.deny: "/etc" (/etc) is not inside any granted path`; err == nil || err.Error() != want {
		t.Errorf("With error = %v, want %s", err, want)
	}
}

var cmpSortMounts = cmp.Transformer("sort", func(in []Mount) []Mount {
	out := slices.Clone(in)
	slices.SortFunc(out, func(a, b Mount) int { return strings.Compare(a.Source, b.Source) })
	return out
})

// The opt-out from refusing calls whose memory and process limits the host
// cannot enforce: off by default, on from the grant key or the flag, and a
// flag cannot turn a grant's "allow" off.
func TestAllowsUnenforcedLimits(t *testing.T) {
	T := fixture(t, "ws/")
	for _, tt := range []struct {
		name  string
		grant string // "" means FromFlags
		flags Flags
		want  bool
	}{
		{"default", "", Flags{}, false},
		{"flag", "", Flags{AllowUnenforcedLimits: true}, true},
		{"grant refuse", `unenforced = "refuse"`, Flags{}, false},
		{"grant allow", `unenforced = "allow"`, Flags{}, true},
		{"grant refuse, flag", `unenforced = "refuse"`, Flags{AllowUnenforcedLimits: true}, true},
		{"grant allow, other flags", `unenforced = "allow"`, Flags{ReadOnly: []string{"ws"}}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var g *Grant
			var err error
			if tt.grant == "" {
				g, err = FromFlags(T, tt.flags)
			} else {
				g = mustParse(t, T, "[paths]\nread_write = [\".\"]\n[limits]\n"+tt.grant+"\n")
				g, err = g.With(T, tt.flags)
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := g.AllowsUnenforcedLimits(); got != tt.want {
				t.Errorf("AllowsUnenforcedLimits() = %v, want %v", got, tt.want)
			}
			if got := slices.ContainsFunc(g.Risks(), func(r string) bool { return strings.HasPrefix(r, "limits.unenforced") }); got != tt.want {
				t.Errorf("Risks() = %q: names limits.unenforced %v, want %v", g.Risks(), got, tt.want)
			}
		})
	}
}
