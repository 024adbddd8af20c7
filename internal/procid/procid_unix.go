//go:build unix && !linux

package procid

import (
	"os"
	"syscall"
)

func pidSelf() int { return os.Getpid() }

func exists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

func start(int) string { return "" }

func defunct(int) bool { return false }

func readSpace() string { return "" }
