package linux

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The init is the airlock binary itself, started again inside the
// sandbox's namespaces. It must never be the binary on disk as such: from
// inside, /proc/1/exe names the init's executable, and opening it for
// writing would let a sandboxed command overwrite the airlock binary on the
// host (CVE-2019-5736, hostile case 38). So every sandbox execs a sealed
// handle instead, one per source path and process, made in one of two ways
// that give the same guarantee:
//
//   - sealOverlay (exeseal_linux.go), when the broker may mount (root, or
//     inside its own user and mount namespaces): the binary opened through
//     a read-only overlayfs mount that is never attached anywhere. Nothing
//     can open that file for writing (EROFS) and nothing can reach the
//     mount to remount it. Zero copy: the init shares the binary's page
//     cache with every other airlock process.
//   - sealMemfd, everywhere else: a copy of the binary in a memfd, sealed
//     against writes, growing and shrinking. Every process that makes one
//     pays for a copy of the whole binary (time and memory).
var sealed struct {
	sync.Mutex
	files map[sealKey]*os.File
}

type sealKey struct {
	path string
	copy bool
}

// sealCopyOnly makes sealedExe skip the overlay and always copy: tests use
// it to run the fallback as root.
var sealCopyOnly atomic.Bool

// sealedExe returns the sealed handle of path, making it on first use.
func sealedExe(path string) (*os.File, error) {
	sealed.Lock()
	defer sealed.Unlock()
	key := sealKey{path, sealCopyOnly.Load()}
	if f, ok := sealed.files[key]; ok {
		return f, nil
	}
	var f *os.File
	if !key.copy {
		// An error means the broker may not mount here, or the kernel
		// lacks overlayfs or the new mount API: the same guarantee then
		// comes from a sealed copy.
		f, _ = sealOverlay(path)
	}
	if f == nil {
		var err error
		f, err = sealMemfd(path)
		if err != nil {
			return nil, err
		}
	}
	if sealed.files == nil {
		sealed.files = map[sealKey]*os.File{}
	}
	sealed.files[key] = f
	return f, nil
}

// unseal forgets f, the sealed handle of path, and closes it: a handle
// that will not run need not be kept.
func unseal(path string, f *os.File) {
	sealed.Lock()
	defer sealed.Unlock()
	for k, g := range sealed.files {
		if k.path == path && g == f {
			delete(sealed.files, k)
		}
	}
	f.Close()
}

// sealMemfd copies path into a memfd and seals it.
func sealMemfd(path string) (*os.File, error) {
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
	return f, nil
}

// sealKind says which seal f is, for the host report.
func sealKind(f *os.File) string {
	var st unix.Statfs_t
	if f == nil || unix.Fstatfs(int(f.Fd()), &st) != nil {
		return "none"
	}
	if st.Type == unix.OVERLAYFS_SUPER_MAGIC {
		return "the binary through a detached read-only overlay (no copy)"
	}
	return "a sealed memfd copy of the binary (this broker may not mount)"
}
