//go:build !linux

package podman

import (
	"context"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// Backend is the Podman backend, which needs Linux.
type Backend struct{}

// New returns sandbox.ErrUnsupported off Linux.
func New(*Options) (*Backend, error) { return nil, sandbox.ErrUnsupported }

// Run returns sandbox.ErrUnsupported.
func (*Backend) Run(context.Context, *sandbox.Spec) (*sandbox.Result, error) {
	return nil, sandbox.ErrUnsupported
}

// Report says the backend cannot run here.
func (*Backend) Report() sandbox.Report { return Probe(nil) }

// Close does nothing.
func (*Backend) Close() error { return nil }

// Probe reports that the Podman backend needs Linux.
func Probe(*Options) sandbox.Report {
	return sandbox.Report{Backend: "podman", Features: []sandbox.Feature{{Name: "linux", Required: true, Detail: "the Podman backend runs on Linux only"}}}
}
