//go:build !linux

package kube

// hostKey is "" where the system names no boot and pid namespace: the
// host is named by its host name alone.
func hostKey() string { return "" }
