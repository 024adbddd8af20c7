//go:build !linux

package linux

import (
	"context"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// Backend is the Linux sandbox backend; it does not run on this platform.
type Backend struct{}

// New returns sandbox.ErrUnsupported on this platform.
func New(opts *Options) (*Backend, error) { return nil, sandbox.ErrUnsupported }

// Run returns sandbox.ErrUnsupported on this platform.
func (b *Backend) Run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	return nil, sandbox.ErrUnsupported
}

// Report says the backend is unavailable on this platform.
func (b *Backend) Report() sandbox.Report {
	return sandbox.Report{Backend: "linux", Features: []sandbox.Feature{{Name: "linux", Detail: "not Linux"}}}
}

// Pool does nothing on this platform.
func (b *Backend) Pool(size int) (release func()) { return func() {} }

// Prewarm does nothing on this platform.
func (b *Backend) Prewarm(spec *sandbox.Spec) error { return nil }

// Warm reports no warm sandboxes on this platform.
func (b *Backend) Warm(spec *sandbox.Spec) int { return 0 }

// Close does nothing on this platform.
func (b *Backend) Close() error { return nil }

// Prestart does nothing on this platform.
func (b *Backend) Prestart(spec *sandbox.Spec) {}
