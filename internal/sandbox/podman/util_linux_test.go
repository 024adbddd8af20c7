package podman

import (
	"io/fs"
	"syscall"
)

func fileUID(fi fs.FileInfo) uint32 { return fi.Sys().(*syscall.Stat_t).Uid }
