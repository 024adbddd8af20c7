package grant

import (
	"slices"
	"strings"
	"testing"
)

// TestPlantedSymlinkRefused (issue 19.10): a granted or denied path that
// passes through a symlink inside a read-write tree is refused, since a
// sandbox could have planted it to have a later grant mount any host path.
func TestPlantedSymlinkRefused(t *testing.T) {
	T := fixture(t, "ws/sub.old/", "host/secret", "ws/sub/vendor -> $T/host", "ws/real/")
	for _, text := range []string{
		"[paths]\nread_write = [\"ws\"]\nread_only = [\"ws/sub/vendor\"]\n",
		"[paths]\nread_write = [\"ws\", \"ws/sub/vendor\"]\n",
		"[paths]\nread_write = [\"ws\"]\ndeny = [\"ws/sub/vendor/secret\"]\n",
	} {
		_, err := Parse([]byte(text), "grant.toml", T)
		if err == nil || !strings.Contains(err.Error(), "passes through the symlink "+T+"/ws/sub/vendor") {
			t.Errorf("grant %q: err %v, want a refusal naming the planted symlink", text, err)
		}
	}
	// The same path granted directly, or outside any read-write tree, is fine.
	mustParse(t, T, "[paths]\nread_write = [\"ws\"]\nread_only = [\"host\"]\n")
	mustParse(t, T, "[paths]\nread_only = [\"ws/sub/vendor\"]\n")
}

// TestDenyGlobRefused (issue 19.14): a pattern in paths.deny is an error at
// load time, never a silent no-op.
func TestDenyGlobRefused(t *testing.T) {
	T := fixture(t, "ws/g/a.txt")
	for _, d := range []string{"ws/g/*.txt", "ws/g/**/*.txt", "ws/g/a?.txt", "ws/[ab]"} {
		_, err := Parse([]byte("[paths]\nread_write = [\"ws\"]\ndeny = [\""+d+"\"]\n"), "grant.toml", T)
		if err == nil || !strings.Contains(err.Error(), "is a pattern") {
			t.Errorf("deny %q: err %v, want a refusal", d, err)
		}
	}
}

// TestGuard (issue 19.16): airlock's own files in a granted tree are
// denied (records, tokens, secret files) or kept read-only (grant files,
// the binary), for the checker and the mounts alike.
func TestGuard(t *testing.T) {
	T := fixture(t, "ws/grant.toml", "ws/.state/", "ws/token", "ws/airlock", "ro/bin")
	g := mustParse(t, T, "[paths]\nread_write = [\"ws\"]\nread_only = [\"ro\"]\n")
	hide := []string{T + "/ws/.state", T + "/ws/token", T + "/elsewhere"}
	keep := []string{T + "/ws/grant.toml", T + "/ws/airlock", T + "/ro/bin"}
	gg, err := g.Guard(hide, keep)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{T + "/ws/.state", T + "/ws/token"} {
		if !slices.Contains(gg.Masks(), p) {
			t.Errorf("%s not masked: %v", p, gg.Masks())
		}
		if d := gg.CheckPath(p+"/x", false); d.Allowed {
			t.Errorf("reading below %s allowed", p)
		}
	}
	for _, p := range []string{T + "/ws/grant.toml", T + "/ws/airlock"} {
		if !slices.Contains(gg.Protected(), p) {
			t.Errorf("%s not protected: %v", p, gg.Protected())
		}
		if d := gg.CheckPath(p, true); d.Allowed {
			t.Errorf("writing %s allowed", p)
		}
		if d := gg.CheckPath(p, false); !d.Allowed {
			t.Errorf("reading %s refused: %s", p, d.Reason)
		}
	}
	if slices.Contains(gg.Protected(), T+"/ro/bin") {
		t.Errorf("a file in a read-only tree needs no protection")
	}
	if d := g.CheckPath(T+"/ws/token", false); !d.Allowed {
		t.Errorf("Guard changed g itself")
	}
	// A granted root that is one of airlock's own paths is an error.
	if _, err := g.Guard([]string{T + "/ws"}, nil); err == nil || !strings.Contains(err.Error(), "holds airlock's own") {
		t.Errorf("hiding a whole granted tree: err %v", err)
	}
}
