package linux

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// sealOverlay opens path through a read-only overlayfs mount that is never
// attached to any mount namespace (the idea of runc's exeseal). The
// overlay has two lower layers and no upper one, so the kernel refuses to
// open any of its files for writing (EROFS), and since the mount has no
// place in any tree nothing can remount it read-write or reach the file
// under it. The handle is O_PATH: enough to exec, nothing to write with.
// It fails where the broker may not mount (no CAP_SYS_ADMIN over its mount
// namespace), and when the file it opens is not path's (the binary was
// replaced between the two) or turns out writable after all.
func sealOverlay(path string) (*os.File, error) {
	ctx, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("fsopen overlay: %w", err)
	}
	defer unix.Close(ctx)
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, fmt.Errorf("resolving the airlock binary %q: %w", path, err)
	}
	dir, name := filepath.Split(real)
	// Without an upper layer overlayfs needs two lower ones: the binary's
	// directory on top, an empty directory under it. The empty one is
	// needed only while the layers are resolved, and no layer may lie
	// inside another.
	dir = filepath.Clean(dir)
	empty, err := emptyLayer(dir)
	if err != nil {
		return nil, err
	}
	defer os.Remove(empty)
	lower := escapeLowerDir(dir) + ":" + escapeLowerDir(empty)
	if err := unix.FsconfigSetString(ctx, "lowerdir", lower); err != nil {
		return nil, fmt.Errorf("overlay lowerdir=%s: %w", lower, err)
	}
	// Keep the real inode numbers (and no xino warnings in dmesg), so the
	// file can be checked against path below. Older kernels lack it.
	_ = unix.FsconfigSetString(ctx, "xino", "off")
	if err := unix.FsconfigCreate(ctx); err != nil {
		return nil, fmt.Errorf("creating the overlay: %w", err)
	}
	mnt, err := unix.Fsmount(ctx, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOSUID)
	if err != nil {
		return nil, fmt.Errorf("fsmount overlay: %w", err)
	}
	defer unix.Close(mnt)
	fd, err := unix.Openat(mnt, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening %s through the overlay: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), "airlock-sealed")
	if err := checkSealed(f, path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// emptyLayer makes an empty directory outside dir and not containing it.
func emptyLayer(dir string) (string, error) {
	inside := func(a, b string) bool { return a == b || b == "/" || strings.HasPrefix(a, b+"/") }
	for _, parent := range []string{os.TempDir(), "/dev/shm", "/run", "/var/tmp"} {
		if parent = filepath.Clean(parent); inside(dir, parent) || inside(parent, dir) {
			continue
		}
		if d, err := os.MkdirTemp(parent, "airlock-seal-"); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("no place for the overlay's empty layer apart from %s", dir)
}

// checkSealed makes sure f is path's regular file (same inode, size and
// modification time: not a binary put in its place since) and cannot be
// opened for writing.
func checkSealed(f *os.File, path string) error {
	var got, want unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &got); err != nil {
		return fmt.Errorf("stat of the sealed binary: %w", err)
	}
	if err := unix.Stat(path, &want); err != nil {
		return fmt.Errorf("stat of the airlock binary %q: %w", path, err)
	}
	if got.Mode&unix.S_IFMT != unix.S_IFREG || got.Ino != want.Ino || got.Size != want.Size || got.Mtim != want.Mtim {
		return fmt.Errorf("the file under the overlay is not the airlock binary %q", path)
	}
	w, err := unix.Open("/proc/self/fd/"+fmt.Sprint(f.Fd()), unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err == nil {
		unix.Close(w)
		return errors.New("the overlay's binary opens for writing")
	}
	if !errors.Is(err, unix.EROFS) {
		return fmt.Errorf("opening the overlay's binary for writing: %w, want EROFS", err)
	}
	return nil
}

// escapeLowerDir escapes the characters overlayfs's lowerdir list gives a
// meaning: the separator ':' and the escape '\'.
func escapeLowerDir(p string) string {
	return strings.NewReplacer(`\`, `\\`, `:`, `\:`).Replace(p)
}
