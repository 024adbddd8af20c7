package linux

import (
	"github.com/airlockhq/airlock/internal/sandbox/diskguard"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

// openDiskGuard records, before anything of a call runs, the space of the
// file systems of its writable mounts for the disk guard (package
// diskguard), which finish watches while the call runs.
func (b *Backend) openDiskGuard(mounts []initproto.Mount) *diskguard.Guard {
	var sources []string
	for _, m := range mounts {
		if m.Writable {
			sources = append(sources, m.Source)
		}
	}
	return diskguard.Open(sources, b.diskFloor)
}
