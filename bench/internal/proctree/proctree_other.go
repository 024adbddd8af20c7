//go:build !linux

package proctree

import "errors"

// ErrUnsupported is returned off Linux, where there is no /proc to read.
var ErrUnsupported = errors.New("proctree: needs Linux /proc")

// Tree is unsupported off Linux.
func Tree(root int) ([]Proc, error) { return nil, ErrUnsupported }

// Read is unsupported off Linux.
func Read(pid int) (Proc, error) { return Proc{}, ErrUnsupported }

// SelfKiB is unsupported off Linux.
func SelfKiB() (rss, hwm int, err error) { return 0, 0, ErrUnsupported }
