//go:build !linux

package runner

// isPlaceholder is nil where airlock makes no placeholders.
var isPlaceholder func(path string) bool
