//go:build !linux

package sandbox

import "io"

// neverWaits is Linux's alone (neverwaits_linux.go): elsewhere every
// write is handed to a goroutine of its own.
func neverWaits(io.Writer) bool { return false }
