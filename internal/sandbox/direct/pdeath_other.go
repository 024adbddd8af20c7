//go:build unix && !linux

package direct

import "syscall"

func setPdeathsig(*syscall.SysProcAttr) {}
