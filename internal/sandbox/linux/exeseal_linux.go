package linux

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/procid"
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

// sealLayerPrefix begins the name of an overlay's empty layer.
const sealLayerPrefix = "airlock-seal-"

// emptyLayer makes an empty directory outside dir and not containing it,
// named for this process (sealLayerName). It first removes the empty
// layers there of processes that are gone: the layer lives only while the
// overlay is made, at a broker's start, and a broker killed then left it,
// which nothing else ever removed.
func emptyLayer(dir string) (string, error) {
	inside := func(a, b string) bool { return a == b || b == "/" || strings.HasPrefix(a, b+"/") }
	for _, parent := range []string{os.TempDir(), "/dev/shm", "/run", "/var/tmp"} {
		if parent = filepath.Clean(parent); inside(dir, parent) || inside(parent, dir) {
			continue
		}
		sweepSealLayers(parent)
		if d, err := os.MkdirTemp(parent, sealLayerName(procid.Self(), procid.Space())); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("no place for the overlay's empty layer apart from %s", dir)
}

// sealLayerName is the MkdirTemp pattern of the empty layers of process
// id of PID namespace space (procid.Space; "" when unknown): the prefix,
// "ID.SPACE" (or "ID"), then "-" and MkdirTemp's random part.
func sealLayerName(id procid.ID, space string) string {
	if space != "" {
		return sealLayerPrefix + string(id) + "." + space + "-"
	}
	return sealLayerPrefix + string(id) + "-"
}

// sweepSealLayers removes the empty layers in parent that processes which
// are gone made: only a directory named by sealLayerName, of a process of
// this PID namespace (another's pid says nothing here) that no longer
// runs, owned by this user, and only when empty (an rmdir). An older
// broker's layer, whose name says nothing of its process, is left alone.
func sweepSealLayers(parent string) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	here := procid.Space()
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), sealLayerPrefix)
		i := strings.LastIndexByte(rest, '-')
		if !ok || !e.IsDir() || i < 0 {
			continue
		}
		owner, space, spaced := strings.Cut(rest[:i], ".")
		pid, start, timed := strings.Cut(owner, "-")
		if !allDigits(pid) || timed && !allDigits(start) || spaced && !spaceName(space) || spaced && space != here || procid.ID(owner).Alive() {
			continue
		}
		p := filepath.Join(parent, e.Name())
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil || int(st.Uid) != os.Geteuid() {
			continue
		}
		_ = unix.Rmdir(p)
	}
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
