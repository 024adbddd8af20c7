package grant

import (
	"strings"
	"testing"
)

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestRunnerSection(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, toml string
		want       Runner
		err        string
	}{
		{"unset", "", Runner{}, ""},
		{"podman", "[runner]\nbackend = \"podman\"\nimage = \"localhost/tools@" + testDigest + "\"\n", Runner{Backend: BackendPodman, Image: "localhost/tools@" + testDigest}, ""},
		{"linux", "[runner]\nbackend = \"linux\"\n", Runner{Backend: BackendLinux}, ""},
		{"tag refused", "[runner]\nbackend = \"podman\"\nimage = \"debian:12\"\n", Runner{}, "pin the image by digest"},
		{"short digest", "[runner]\nimage = \"x@sha256:abc\"\n", Runner{}, "64 lower-case hex"},
		{"podman needs image", "[runner]\nbackend = \"podman\"\n", Runner{}, "needs image"},
		{"unknown backend", "[runner]\nbackend = \"docker\"\n", Runner{}, `unknown backend "docker"`},
		{"unknown key", "[runner]\nruntime = \"crun\"\n", Runner{}, "unknown key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := Parse([]byte(tc.toml), "g.toml", dir)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse error = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := g.Runner(); got != tc.want {
				t.Errorf("Runner() = %+v, want %+v", got, tc.want)
			}
			g2, err := g.With(dir, Flags{})
			if err != nil {
				t.Fatal(err)
			}
			if got := g2.Runner(); got != tc.want {
				t.Errorf("With().Runner() = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCheckImage(t *testing.T) {
	if err := CheckImage("localhost/a/b@" + testDigest); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"", "debian", "debian:12", "debian@sha256:" + strings.Repeat("A", 64), "@" + testDigest} {
		if CheckImage(bad) == nil {
			t.Errorf("CheckImage(%q) accepted it", bad)
		}
	}
}
