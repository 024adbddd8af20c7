//go:build !cgo || !amd64

package linux

import "os"

// spawnInit needs cgo on amd64 (spawn_cgo_linux.go); elsewhere
// the init is started with os.StartProcess.
func spawnInit(string, []string, []string, []*os.File, bool, bool, int) (*os.Process, error) {
	return nil, errSpawnUnsupported
}

// spawnBuilt says spawnInit is built in.
const spawnBuilt = false
