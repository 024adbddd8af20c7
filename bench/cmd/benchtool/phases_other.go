//go:build !linux

package main

import "errors"

func cmdPhases([]string) error {
	return errors.New("phases: the sandbox's setup steps exist on Linux only")
}
