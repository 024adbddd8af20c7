package linux

import (
	"debug/buildinfo"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"syscall"

	"github.com/airlockhq/airlock/internal/buildmatch"
	"github.com/airlockhq/airlock/internal/sandbox"
)

// InitCommand is the file name of the separately built sandbox init,
// cmd/airlock-init: only the init and the tools run inside, so it starts
// with a fraction of the airlock binary's size and package initialisation.
// When Options.Executable is empty, New runs it as every sandbox's init if
// it lies next to the running binary, is of the same build
// (buildmatch.Same) and is as trusted as that binary (trustedBeside);
// otherwise the running binary is the init, as before: slower to start,
// the same isolation.
const InitCommand = sandbox.SeparateInitName

// initPackage is the import path of InitCommand's main package, as its
// build information names it.
const initPackage = "github.com/airlockhq/airlock/cmd/airlock-init"

// separateInit returns the sealed handle of the InitCommand next to self
// and its path, or an error saying why it cannot stand in for self.
func separateInit(self string) (*os.File, string, error) {
	path := filepath.Join(filepath.Dir(self), InitCommand)
	if err := trustedBeside(self, path); err != nil {
		return nil, path, err
	}
	own, ok := debug.ReadBuildInfo()
	if !ok {
		return nil, path, errors.New("this binary carries no build information")
	}
	if err := sameBuild(own, path, nil); err != nil {
		return nil, path, err
	}
	f, err := sealedExe(path)
	if err != nil {
		return nil, path, err
	}
	// What runs is the sealed handle: it is checked too, so a file
	// swapped in after the check above never runs.
	if err := sameBuild(own, path, f); err != nil {
		unseal(path, f)
		return nil, path, err
	}
	return f, path, nil
}

// sameBuild checks that the init at path (read through f when not nil) is
// InitCommand of own's build.
func sameBuild(own *debug.BuildInfo, path string, f *os.File) error {
	var (
		other *debug.BuildInfo
		err   error
	)
	if f != nil {
		// The overlay's handle is O_PATH (see sealOverlay): read through
		// a descriptor opened from it, of the same file.
		var r *os.File
		if r, err = os.Open("/proc/self/fd/" + strconv.Itoa(int(f.Fd()))); err == nil {
			other, err = buildinfo.Read(r)
			r.Close()
		}
	} else {
		other, err = buildinfo.ReadFile(path)
	}
	if err != nil {
		return fmt.Errorf("reading the build information of %s: %w", path, err)
	}
	if other.Path != initPackage {
		return fmt.Errorf("%s is %s, not %s", path, other.Path, initPackage)
	}
	if err := buildmatch.Same(own, other); err != nil {
		return fmt.Errorf("%s is not of this airlock's build: %w", path, err)
	}
	return nil
}

// trustedBeside checks that no one but those who may replace self may
// replace path: a regular file (no symlink), owned by self's owner or
// root, writable by its owner alone, in a directory owned by one of them
// that no one else may write to (or sticky, which keeps others from
// replacing a file they do not own).
func trustedBeside(self, path string) error {
	selfSt, err := os.Stat(self)
	if err != nil {
		return fmt.Errorf("reading this binary's owner: %w", err)
	}
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no %s next to %s", InitCommand, self)
	}
	if err != nil {
		return err
	}
	owner := uidOf(selfSt)
	ok := func(uid uint32) bool { return uid == 0 || uid == owner }
	switch {
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	case !ok(uidOf(fi)):
		return fmt.Errorf("%s is owned by uid %d, neither root nor this binary's owner (uid %d)", path, uidOf(fi), owner)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s may be written by others (mode %v)", path, fi.Mode().Perm())
	}
	dir := filepath.Dir(path)
	di, err := os.Stat(dir)
	if err != nil {
		return err
	}
	switch {
	case !ok(uidOf(di)):
		return fmt.Errorf("%s is owned by uid %d, neither root nor this binary's owner (uid %d)", dir, uidOf(di), owner)
	case di.Mode().Perm()&0o022 != 0 && di.Mode()&fs.ModeSticky == 0:
		return fmt.Errorf("others may replace files in %s (mode %v)", dir, di.Mode().Perm())
	}
	return nil
}

func uidOf(fi fs.FileInfo) uint32 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Uid
	}
	return ^uint32(0)
}
