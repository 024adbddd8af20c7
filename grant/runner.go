package grant

import (
	"regexp"
	"strings"
	"sync"
)

// Backends a grant's [runner] section may name.
const (
	// BackendLinux is the native Linux sandbox (the default).
	BackendLinux = "linux"
	// BackendPodman runs each call in a fresh Podman container.
	BackendPodman = "podman"
)

// Runner is a grant's [runner] section: which sandbox backend runs the
// calls and, for a container backend, the image, pinned by digest.
type Runner struct {
	// Backend is BackendLinux, BackendPodman, or "" when the grant does
	// not say (the command line's choice, else the native backend).
	Backend string
	// Image is the container image as NAME@sha256:HEX; "" when unset.
	Image string
}

// Runner returns the grant's [runner] section.
func (g *Grant) Runner() Runner { return g.runner }

// digestRef matches an image reference pinned by a sha256 digest.
var digestRef = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z0-9][a-z0-9._/:-]*@sha256:[a-f0-9]{64}$`)
})

// CheckImage reports whether ref names an image by digest
// (NAME@sha256:<64 hex>), the only form a container backend accepts: a
// tag can be moved to other content, a digest cannot.
func CheckImage(ref string) error {
	if digestRef().MatchString(ref) {
		return nil
	}
	if strings.Contains(ref, "@sha256:") {
		return &imageError{ref: ref, msg: "its digest is not sha256 followed by 64 lower-case hex digits"}
	}
	return &imageError{ref: ref, msg: "a tag or bare name can change under you; pin the image by digest: NAME@sha256:<digest> (podman images --digests, or podman inspect --format '{{.Digest}}' " + ref + ")"}
}

type imageError struct{ ref, msg string }

func (e *imageError) Error() string {
	return "image " + quote(e.ref) + " is not pinned by digest: " + e.msg
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

// runnerFromTOML reads [runner]: backend and image.
func runnerFromTOML(s *spec, v any, key []string, ps *problems) {
	walkTable(v, key, ps, map[string]func(any, []string){
		"backend": func(v any, key []string) {
			b, ok := v.(string)
			switch {
			case !ok:
				ps.add(key, "must be a string, not %s", tomlType(v))
			case b != BackendLinux && b != BackendPodman:
				ps.add(key, "unknown backend %q (known: %s, %s)", b, BackendLinux, BackendPodman)
			default:
				s.runner.Backend = b
			}
		},
		"image": func(v any, key []string) {
			img, ok := v.(string)
			if !ok {
				ps.add(key, "must be a string, not %s", tomlType(v))
				return
			}
			if err := CheckImage(img); err != nil {
				ps.add(key, "%v", err)
				return
			}
			s.runner.Image = img
		},
	})
	if s.runner.Backend == BackendPodman && s.runner.Image == "" {
		if t, ok := v.(map[string]any); ok {
			if _, set := t["image"]; !set {
				ps.add(key, "backend = %q needs image = \"NAME@sha256:<digest>\"", BackendPodman)
			}
		}
	}
}
