//go:build !linux

package diskguard

// Guard guards nothing on this platform, where no sandbox runs.
type Guard struct{}

// Open returns nil: no guard runs on this platform.
func Open(sources []string, set int64) *Guard { return nil }

// Close does nothing.
func (g *Guard) Close() {}

// Watch does nothing.
func (g *Guard) Watch(kill func()) (stop func()) { return func() {} }
