package grant

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// checkFixture is a workspace $T/ws granted read-write, $T/ro read-only, and
// $T/outside not granted, with the traps of hostile-cases.md §A.
var checkFixture = []string{
	"ws/file.txt", "ws/sub/", "ws/.git/HEAD", "ws/.git/hooks/pre-commit", "ws/.git/config", "ws/.git/objects/",
	"ws/vendor/sub/.git/config", "ws/.vscode/settings.json", "ws/.mcp.json", "ws/.env", "ws/secrets/key",
	"ws/docs/readme",
	"ws/d -> $T/outside", "ws/rel -> ../outside", "ws/envlink -> .env", "ws/hooklink -> .git/hooks",
	"ws/link-to-root -> /", "ws/loop -> loop", "ws/inside -> sub",
	"ws-evil/s", "ws_x/s", "wsx",
	"outside/canary", "ro/f",
	"wslink -> $T/ws",
}

const checkGrant = `
[paths]
read_write = ["ws"]
read_only = ["ro", "ws/docs"]
deny = ["ws/.env", "ws/secrets"]
[network]
hosts = ["api.github.com", "*.pypi.org"]
`

type verdict struct {
	Allowed bool
	Rule    string
}

func TestCheckPaths(t *testing.T) {
	T := fixture(t, checkFixture...)
	g := mustParse(t, T, checkGrant)
	W := T + "/ws"
	rw := `paths.read_write "ws" ($T/ws)`
	allowRead := verdict{true, "tools.enabled read_file; " + rw}
	allowWrite := verdict{true, "tools.enabled write_file; " + rw}
	outside := verdict{false, "paths"}
	protected := func(name string) verdict { return verdict{false, `protected "` + name + `" in ` + rw} }

	tests := []struct {
		name  string
		path  string
		write bool
		cwd   string
		want  verdict
	}{
		{"plain read", W + "/file.txt", false, "", allowRead},
		{"plain write", W + "/new.txt", true, "", allowWrite},
		{"relative to grant dir", "ws/file.txt", false, "", allowRead},
		{"relative to call cwd", "../file.txt", false, "ws/sub", allowRead},
		{"write into git objects", W + "/.git/objects/ab", true, "", allowWrite},
		{"read protected", W + "/.git/hooks/pre-commit", false, "", allowRead},

		// §A1 lexical traversal.
		{"traversal", W + "/../../etc/passwd", false, "", outside},
		{"dot traversal", W + "/./../x", true, "", outside},
		{"double slash", "//etc/shadow", false, "", outside},
		{"absolute outside", "/etc/passwd", false, "", outside},
		{"relative traversal", "../../../../../../etc/passwd", false, "ws/sub", outside},

		// §A2 prefix confusion.
		{"prefix dash", T + "/ws-evil/s", false, "", outside},
		{"prefix underscore", T + "/ws_x/s", false, "", outside},
		{"prefix no separator", T + "/wsx", false, "", outside},

		// §A3 ancestor symlinks with a missing leaf.
		{"symlinked ancestor, missing leaf", W + "/d/new/sub/x.txt", true, "", outside},
		{"relative symlinked ancestor, missing leaf", W + "/rel/new/x.txt", true, "", outside},
		{"symlink out, existing", W + "/d/canary", false, "", outside},
		{"link to root", W + "/link-to-root/etc/passwd", false, "", outside},
		{"symlink loop", W + "/loop/x", false, "", outside},
		{"symlink staying inside", W + "/inside/new.txt", true, "", allowWrite},
		{"symlinked grant root alias", T + "/wslink/file.txt", false, "", allowRead},

		// Denied sub-paths win over the grant, however they are reached.
		{"deny file", W + "/.env", false, "", verdict{false, `paths.deny "$T/ws/.env"`}},
		{"deny dir", W + "/secrets/key", false, "", verdict{false, `paths.deny "$T/ws/secrets"`}},
		{"deny new file in dir", W + "/secrets/new", true, "", verdict{false, `paths.deny "$T/ws/secrets"`}},
		{"deny via symlink", W + "/envlink", false, "", verdict{false, `paths.deny "$T/ws/.env"`}},

		// Read-only grants, including one nested in a read-write grant.
		{"read ro", T + "/ro/f", false, "", verdict{true, `tools.enabled write_file; paths.read_only "ro" ($T/ro)`}},
		{"write ro", T + "/ro/f", true, "", verdict{false, `paths.read_only "ro" ($T/ro)`}},
		{"create in ro", T + "/ro/new", true, "", verdict{false, `paths.read_only "ro" ($T/ro)`}},
		{"write nested ro", W + "/docs/readme", true, "", verdict{false, `paths.read_only "ws/docs" ($T/ws/docs)`}},

		// §A8 protected paths, existing or not.
		{"git hook", W + "/.git/hooks/pre-commit", true, "", protected(".git/hooks")},
		{"new git hook", W + "/.git/hooks/post-checkout", true, "", protected(".git/hooks")},
		{"git config", W + "/.git/config", true, "", protected(".git/config")},
		{"git pointer", W + "/.git", true, "", protected(".git")},
		{"nested repo config", W + "/vendor/sub/.git/config", true, "", protected(".git")},
		{"nested repo new hook", W + "/vendor/sub/.git/hooks/post-checkout", true, "", protected(".git")},
		{"nested repo created fresh", W + "/sub/new/.git/config", true, "", protected(".git")},
		{"hook via symlink", W + "/hooklink/pre-push", true, "", protected(".git/hooks")},
		{"bashrc", W + "/.bashrc", true, "", protected(".bashrc")},
		{"nested zshrc", W + "/sub/.zshrc", true, "", protected(".zshrc")},
		{"mcp json", W + "/.mcp.json", true, "", protected(".mcp.json")},
		{"vscode settings", W + "/.vscode/settings.json", true, "", protected(".vscode")},
		{"claude settings, missing", W + "/.claude/settings.json", true, "", protected(".claude")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool := "read_file"
			if tt.write || strings.Contains(tt.want.Rule, "write_file") {
				tool = "write_file"
			}
			d := g.Check(Call{Tool: tool, Cwd: tt.cwd, Paths: []PathUse{{Path: tt.path, Write: tt.write}}})
			want := verdict{tt.want.Allowed, strings.ReplaceAll(tt.want.Rule, "$T", T)}
			if diff := cmp.Diff(want, verdict{d.Allowed, d.Rule}); diff != "" {
				t.Errorf("Check(%q, write=%v) mismatch (-want +got):\n%s\nreason: %s", tt.path, tt.write, diff, d.Reason)
			}
			if !d.Allowed && d.Reason == "" {
				t.Errorf("refusal without a reason")
			}
			if strings.Contains(d.Reason, fileContent) {
				t.Errorf("reason echoes file contents: %s", d.Reason)
			}
		})
	}
}

func TestCheckResolvedPaths(t *testing.T) {
	T := fixture(t, checkFixture...)
	g := mustParse(t, T, checkGrant)
	d := g.Check(Call{Tool: "write_file", Cwd: "ws/sub", Paths: []PathUse{
		{Path: "../inside/a/b.txt", Write: true},
		{Path: T + "/wslink/file.txt"},
	}})
	want := Decision{
		Allowed: true,
		Rule:    `tools.enabled write_file; paths.read_write "ws" (` + T + `/ws)`,
		Paths:   []string{T + "/ws/sub/a/b.txt", T + "/ws/file.txt"},
		Cwd:     T + "/ws/sub",
	}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("Check mismatch (-want +got):\n%s", diff)
	}
}

func TestCheckCallShape(t *testing.T) {
	T := fixture(t, checkFixture...)
	g := mustParse(t, T, checkGrant)
	tests := []struct {
		name string
		call Call
		want verdict
	}{
		{"tool not enabled", Call{Tool: "launch_missiles"}, verdict{false, "tools.enabled"}},
		{"exec in grant dir outside grants", Call{Tool: "shell", Exec: true}, verdict{false, "paths"}},
		{"exec in workspace", Call{Tool: "shell", Exec: true, Cwd: "ws"}, verdict{true, `tools.enabled shell; paths.read_write "ws" (` + T + `/ws)`}},
		{"cwd through /proc", Call{Tool: "shell", Exec: true, Cwd: "/proc/self/cwd"}, verdict{false, "paths"}},
		{"cwd fd magic link", Call{Tool: "shell", Exec: true, Cwd: "/proc/self/fd/7"}, verdict{false, "paths"}},
		{"cwd traversal", Call{Tool: "shell", Exec: true, Cwd: T + "/ws/../.."}, verdict{false, "paths"}},
		{"cwd link to root", Call{Tool: "shell", Exec: true, Cwd: T + "/ws/link-to-root"}, verdict{false, "paths"}},
		{"cwd missing", Call{Tool: "shell", Exec: true, Cwd: "ws/nope"}, verdict{false, `paths.read_write "ws" (` + T + `/ws)`}},
		{"host allowed", Call{Tool: "http_fetch", Hosts: []string{"api.github.com:443"}}, verdict{true, `tools.enabled http_fetch; network.hosts "api.github.com"`}},
		{"host without port", Call{Tool: "http_fetch", Hosts: []string{"files.pypi.org"}}, verdict{true, `tools.enabled http_fetch; network.hosts "*.pypi.org"`}},
		{"host bad port", Call{Tool: "http_fetch", Hosts: []string{"api.github.com:22"}}, verdict{false, "network.hosts"}},
		{"host port 0", Call{Tool: "http_fetch", Hosts: []string{"api.github.com:0"}}, verdict{false, "network.hosts"}},
		{"host port 65536", Call{Tool: "http_fetch", Hosts: []string{"api.github.com:65536"}}, verdict{false, "network.hosts"}},
		{"host two ports", Call{Tool: "http_fetch", Hosts: []string{"api.github.com:443:1"}}, verdict{false, "network.hosts"}},
		{"empty path", Call{Tool: "read_file", Paths: []PathUse{{}}}, verdict{false, "paths"}},
		{"ungranted cwd anchors a granted path", Call{Tool: "read_file", Cwd: T, Paths: []PathUse{{Path: "ws/file.txt"}}}, verdict{true, `tools.enabled read_file; paths.read_write "ws" (` + T + `/ws)`}},
		{"ungranted cwd, ungranted path", Call{Tool: "read_file", Cwd: T, Paths: []PathUse{{Path: "outside/canary"}}}, verdict{false, "paths"}},
		{"non-exec cwd through /proc", Call{Tool: "read_file", Cwd: "/proc/self/cwd", Paths: []PathUse{{Path: "x"}}}, verdict{false, "paths"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := g.Check(tt.call)
			if diff := cmp.Diff(tt.want, verdict{d.Allowed, d.Rule}); diff != "" {
				t.Errorf("Check mismatch (-want +got):\n%s\nreason: %s", diff, d.Reason)
			}
		})
	}
}

func TestCheckGitDirGrant(t *testing.T) {
	T := fixture(t, checkFixture...)
	g := mustParse(t, T, "[paths]\nread_write = [\"ws/.git\"]\n")
	rule := `paths.read_write "ws/.git" ($T/ws/.git)`
	tests := []struct {
		path string
		want verdict
	}{
		{"ws/.git/objects/ab", verdict{true, "tools.enabled write_file; " + rule}},
		{"ws/.git/hooks/pre-commit", verdict{false, `protected ".git/hooks" in ` + rule}},
		{"ws/.git/config", verdict{false, `protected ".git/config" in ` + rule}},
	}
	for _, tt := range tests {
		d := g.Check(Call{Tool: "write_file", Paths: []PathUse{{Path: tt.path, Write: true}}})
		want := verdict{tt.want.Allowed, strings.ReplaceAll(tt.want.Rule, "$T", T)}
		if diff := cmp.Diff(want, verdict{d.Allowed, d.Rule}); diff != "" {
			t.Errorf("Check(%q) mismatch (-want +got):\n%s", tt.path, diff)
		}
	}
}

func TestNestedGrantOfProtectedPath(t *testing.T) {
	T := fixture(t, checkFixture...)
	_, err := Parse([]byte("[paths]\nread_write = [\"ws\", \"ws/.git/hooks\"]\n"), "grant.toml", T)
	want := `grant.toml:2: paths.read_write: "ws/.git/hooks" is protected (.git/hooks) inside "ws"; list ".git/hooks" under paths.writable_protected to grant it`
	if err == nil || err.Error() != want {
		t.Errorf("Parse error:\n%v\nwant:\n%s", err, want)
	}
	g := mustParse(t, T, "[paths]\nread_write = [\"ws\", \"ws/.git/hooks\"]\nwritable_protected = [\".git/hooks\"]\n")
	d := g.Check(Call{Tool: "write_file", Paths: []PathUse{{Path: "ws/.git/hooks/x", Write: true}}})
	if !d.Allowed {
		t.Errorf("write to an explicitly granted hooks dir refused: %s", d.Reason)
	}
}

func TestCheckWritableProtected(t *testing.T) {
	T := fixture(t, checkFixture...)
	g := mustParse(t, T, "[paths]\nread_write = [\"ws\"]\nwritable_protected = [\".vscode\", \".git/hooks\"]\n")
	d := g.Check(Call{Tool: "write_file", Paths: []PathUse{{Path: "ws/.vscode/settings.json", Write: true}}})
	want := Decision{
		Allowed: true,
		Rule:    `tools.enabled write_file; paths.read_write "ws" (` + T + `/ws)`,
		Risks:   []string{"writes protected path " + T + `/ws/.vscode, allowed by paths.writable_protected ".vscode"`},
		Paths:   []string{T + "/ws/.vscode/settings.json"},
		Cwd:     T,
	}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("Check mismatch (-want +got):\n%s", diff)
	}
	if d := g.Check(Call{Tool: "write_file", Paths: []PathUse{{Path: "ws/.git/config", Write: true}}}); d.Allowed {
		t.Errorf(".git/config writable though only .git/hooks was overridden")
	}
	for _, p := range g.Protected() {
		if strings.HasSuffix(p, "/.vscode") || strings.HasSuffix(p, "/.git/hooks") {
			t.Errorf("Protected lists overridden %s", p)
		}
	}
}

func TestProtectedSymlinkTarget(t *testing.T) {
	// .git/hooks is a symlink to a directory in the tree: writing the target
	// directly must be refused too.
	T := fixture(t, "ws/.git/HEAD", "ws/.git/config", "ws/realhooks/", "ws/.git/hooks -> ../realhooks")
	g := mustParse(t, T, "[paths]\nread_write = [\"ws\"]\n")
	d := g.Check(Call{Tool: "write_file", Paths: []PathUse{{Path: "ws/realhooks/pre-commit", Write: true}}})
	if d.Allowed {
		t.Errorf("write to the target of a symlinked .git/hooks allowed")
	}
	want := []string{T + "/ws/.git/commondir", T + "/ws/.git/config", T + "/ws/.git/config.worktree", T + "/ws/.git/hooks", T + "/ws/.git/modules", T + "/ws/.gitconfig", T + "/ws/.gitmodules", T + "/ws/realhooks"}
	var got []string
	for _, p := range g.Protected() {
		if strings.Contains(p, "git") || strings.Contains(p, "hooks") {
			got = append(got, p)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Protected mismatch (-want +got):\n%s", diff)
	}
}

// TestCheckResolvedAgreesWithCheckPath: for a path with no symlink on it,
// CheckResolved (no I/O) decides what CheckPath decides.
func TestCheckResolvedAgreesWithCheckPath(t *testing.T) {
	T := fixture(t, "ws/f", "ws/sub/f", "ws/sub/w/f", "ws/pinned.txt", "ws/secrets/key", "ws/.git/hooks/pre-commit", "ws/.vscode/x", "ws/deep/.git/config", "ro/f", "out/f")
	g := mustParse(t, T, `
[paths]
read_write = ["ws", "ws/sub/w"]
read_only = ["ws/sub", "ws/pinned.txt", "ro"]
deny = ["ws/secrets"]
[tools]
enabled = ["read_file"]
`)
	var paths []string
	filepath.WalkDir(T, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			paths = append(paths, p)
			if d.IsDir() {
				paths = append(paths, filepath.Join(p, "new"), filepath.Join(p, "new", "deeper"))
			}
		}
		return nil
	})
	paths = append(paths, "/proc/self/root", "/", T+"/ws/../ro")
	for _, p := range paths {
		for _, write := range []bool{false, true} {
			want, got := g.CheckPath(p, write), g.CheckResolved(p, write)
			if filepath.Clean(p) != p {
				if got.Allowed {
					t.Errorf("CheckResolved(%s) of an unclean path allowed", p)
				}
				continue
			}
			if got.Allowed != want.Allowed || got.Rule != want.Rule {
				t.Errorf("CheckResolved(%s, write=%v) = %v %q, CheckPath says %v %q", p, write, got.Allowed, got.Rule, want.Allowed, want.Rule)
			}
		}
	}
}
