package cli

import (
	"fmt"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/podman"
)

// chooseBackend returns the sandbox backend that --backend (or, when it
// is empty, the grant's [runner] backend) names: the native one by
// default, or Podman with --image or the grant's [runner] image.
func chooseBackend(flagBackend, flagImage string, g *grant.Grant, stateDir string) (sandbox.Backend, error) {
	name, image := flagBackend, flagImage
	r := g.Runner()
	if name == "" {
		name = r.Backend
	}
	if image == "" {
		image = r.Image
	}
	switch name {
	case "", grant.BackendLinux:
		return nativeBackend(stateDir)
	case grant.BackendPodman:
		if image == "" {
			return nil, fmt.Errorf("the podman backend needs an image pinned by digest: --image NAME@sha256:<digest>, or [runner] image in the grant")
		}
		return podman.New(&podman.Options{Image: image})
	}
	return nil, fmt.Errorf("--backend %q: unknown backend (known: %s, %s)", name, grant.BackendLinux, grant.BackendPodman)
}
