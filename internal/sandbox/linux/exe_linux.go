package linux

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// sealed holds, per source path, a sealed memfd copy of the airlock binary.
// Sandboxes exec this copy, so nothing inside can write the binary on disk
// through /proc/self/exe (CVE-2019-5736, hostile case 38); the seals make
// the copy itself immutable too.
var sealed struct {
	sync.Mutex
	files map[string]*os.File
}

// sealedExe returns the sealed copy of path, making it on first use.
func sealedExe(path string) (*os.File, error) {
	sealed.Lock()
	defer sealed.Unlock()
	if f, ok := sealed.files[path]; ok {
		return f, nil
	}
	src, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening the airlock binary %q: %w", path, err)
	}
	defer src.Close()
	fd, err := unix.MemfdCreate("airlock", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) { // kernels before 6.3 have no MFD_EXEC
		fd, err = unix.MemfdCreate("airlock", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "airlock-sealed")
	if _, err := io.Copy(f, src); err != nil {
		f.Close()
		return nil, fmt.Errorf("copying the airlock binary into a memfd: %w", err)
	}
	seals := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		f.Close()
		return nil, fmt.Errorf("sealing the airlock binary copy: %w", err)
	}
	if sealed.files == nil {
		sealed.files = map[string]*os.File{}
	}
	sealed.files[path] = f
	return f, nil
}
