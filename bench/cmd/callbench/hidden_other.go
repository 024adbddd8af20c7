//go:build !linux

package main

// hiddenMode: there is no native sandbox off Linux.
func hiddenMode() (int, bool) { return 0, false }
