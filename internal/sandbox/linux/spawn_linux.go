package linux

import "errors"

// errSpawnUnsupported: spawnInit cannot start the init here (a build
// without cgo, another architecture, a kernel without clone3 or one of its
// flags); os.StartProcess does, as it always has.
var errSpawnUnsupported = errors.New("the init cannot be spawned without a fork here")
