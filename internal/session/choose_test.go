package session

import (
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
)

func TestChooseRefusals(t *testing.T) {
	dir := t.TempDir()
	plain, err := grant.Parse(nil, "g.toml", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, backend, image, want string
	}{
		{"unknown backend", "docker", "", `unknown backend (known: linux, podman)`},
		{"podman without an image", "podman", "", "needs an image pinned by digest"},
		{"podman with a tag", "podman", "debian:12", "pin the image by digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Choose(tc.backend, tc.image, plain, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Choose(%q, %q) = %v, %v; want an error containing %q", tc.backend, tc.image, b, err, tc.want)
			}
		})
	}
	// The grant's [runner] is the default; the flag wins over it.
	g, err := grant.Parse([]byte("[runner]\nbackend = \"podman\"\nimage = \"localhost/x@sha256:"+strings.Repeat("a", 64)+"\"\n"), "g.toml", dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Choose("", "debian:12", g, ""); err == nil || !strings.Contains(err.Error(), "pin the image by digest") {
		t.Errorf("--image over the grant's: %v, want the flag's tag refused", err)
	}
	if _, err := Choose("bogus", "", g, ""); err == nil || !strings.Contains(err.Error(), "unknown backend") {
		t.Errorf("--backend over the grant's: %v", err)
	}
}
