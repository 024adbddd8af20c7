//go:build linux && !amd64

package main

func archCalls() []call { return nil }

// setIDArch tries the calls only x86_64 has: none here.
func setIDArch(next, file func() string, sys func(name string, nr uintptr, fd bool, args ...uintptr)) {
}
