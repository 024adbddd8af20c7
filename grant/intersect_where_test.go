package grant

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestIntersectKeepsWhereSandboxesRun: the grant a capsule runs under keeps
// the granting grant's [runner] and [remote] tables. Narrowing what the
// calls may touch must not move them out of the container image or off the
// remote hands the user chose and onto this host, where a sandbox sees
// the granted tree as it is here (the hands' token file included).
func TestIntersectKeepsWhereSandboxesRun(t *testing.T) {
	T := fixture(t, "ws/f", "hands.token")
	for _, tc := range []struct {
		name, toml string
	}{
		{"runner", `
[paths]
read_write = ["ws"]
[runner]
backend = "podman"
image = "localhost/tools@` + testDigest + `"
`},
		{"remote", `
[paths]
read_write = ["ws"]
[remote]
endpoint = "wss://hands.example:8443"
token = "file:hands.token"
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := mustParse(t, T, tc.toml)
			n, missing, err := g.Intersect(T+"/ws", Ask{ReadWrite: []string{"."}, Tools: []string{"read_file"}})
			if err != nil || len(missing) > 0 {
				t.Fatalf("Intersect: %v %v", err, missing)
			}
			if diff := cmp.Diff(g.Runner(), n.Runner()); diff != "" {
				t.Errorf("Intersect().Runner() (-grant +capsule's):\n%s", diff)
			}
			if diff := cmp.Diff(g.Remote(), n.Remote()); diff != "" {
				t.Errorf("Intersect().Remote() (-grant +capsule's):\n%s", diff)
			}
		})
	}
}

// TestIntersectFilesAreTheGrants: the grant a capsule runs under is built
// from the same grant files as the grant it narrows, and from no other:
// its label ("capsule") is no file, which sessions would otherwise keep
// read-only (a placeholder in the working directory, if missing).
func TestIntersectFilesAreTheGrants(t *testing.T) {
	T := fixture(t, "ws/f")
	t.Chdir(T + "/ws")
	g := mustParse(t, T, "[paths]\nread_write = [\"ws\"]\n")
	n, missing, err := g.Intersect(T+"/ws", Ask{ReadWrite: []string{"."}, Tools: []string{"read_file"}})
	if err != nil || len(missing) > 0 {
		t.Fatalf("Intersect: %v %v", err, missing)
	}
	if diff := cmp.Diff(g.Files(), n.Files()); diff != "" {
		t.Errorf("Intersect().Files() (-grant +capsule's):\n%s", diff)
	}
}
