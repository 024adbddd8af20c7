package linux

import "github.com/airlockhq/airlock/internal/sandbox/diskguard"

// guardDisk starts the disk guard (package diskguard) over x's writable
// mounts and returns what stops it.
func (b *Backend) guardDisk(x *box) (stop func()) {
	var sources []string
	for _, m := range x.cfg.Mounts {
		if m.Writable {
			sources = append(sources, m.Source)
		}
	}
	return diskguard.Start(sources, b.diskFloor, func() {
		b.log.Debug("disk guard: a file system the call may write is below its floor")
		x.kill("disk")
	})
}
