package linux

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

// placeholderXattr marks a directory airlock created as a placeholder, so
// any airlock process may remove it once nobody uses it.
const placeholderXattr = "user.airlock.placeholder"

// placeholders manages the empty directories the backend creates on the host
// for protected paths that do not exist yet (.git/hooks, .bashrc, .vscode,
// ...), so that the init can mount them read-only and the sandbox cannot
// create them. They are created on the host before the sandbox starts.
//
// Sharing, within a process and across processes:
//   - every sandbox that relies on a placeholder holds it; this process keeps
//     one open descriptor per placeholder with a shared flock(2) for as long
//     as any of its sandboxes holds it;
//   - a placeholder is removed only by a process that gets the exclusive lock
//     (so no other airlock process is using it), only if it is still empty,
//     and only if it carries the placeholderXattr mark (a user's own empty
//     directory is never removed);
//   - after taking the shared lock a holder checks that the path still names
//     the directory it locked, and starts again if a remover got there first.
//
// Where the filesystem has no user extended attributes, placeholders are
// unmarked: the creating process still removes them, but another process
// cannot tell them from a user's directory and does not lock them.
type placeholders struct {
	mu   sync.Mutex
	refs map[string]*heldDir // host path -> this process's hold
}

// heldDir is this process's hold on one placeholder.
type heldDir struct {
	n       int      // sandboxes of this process holding it
	f       *os.File // open directory with a shared flock
	created bool     // this process created it
}

// hold makes sure that, for each read-only path of cfg inside a writable
// mount, every missing directory up to it exists as a placeholder, and counts
// this sandbox as holding each placeholder it relies on. It returns what to
// pass to release. Directories are created through os.Root, so a symlink in
// the tree cannot lead the backend outside the mount.
func (p *placeholders) hold(cfg *initproto.Config) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refs == nil {
		p.refs = map[string]*heldDir{}
	}
	var held []string
	for _, ro := range cfg.ReadOnly {
		m, ok := writableMountOf(cfg.Mounts, ro)
		if !ok {
			continue
		}
		root, err := os.OpenRoot(m.Source)
		if err != nil {
			return held, fmt.Errorf("opening %s for protected paths: %w", m.Source, err)
		}
		parts := strings.Split(strings.TrimPrefix(ro, m.Target+"/"), "/")
		for i := range parts {
			sub := strings.Join(parts[:i+1], "/")
			host := filepath.Join(m.Source, sub)
			if h := p.refs[host]; h != nil {
				h.n++
				held = append(held, host)
				continue
			}
			h, err := lockPlaceholder(root, sub)
			if err != nil {
				root.Close()
				return held, fmt.Errorf("protected path %s: %w", host, err)
			}
			if h != nil {
				p.refs[host] = h
				held = append(held, host)
			}
		}
		root.Close()
	}
	return held, nil
}

// lockPlaceholder creates (or finds) the placeholder sub beneath root and
// takes a shared lock on it. It returns nil for a directory or file that is
// the user's own (exists and is not marked as a placeholder).
func lockPlaceholder(root *os.Root, sub string) (*heldDir, error) {
	for attempt := 0; attempt < 8; attempt++ {
		created := false
		fi, err := root.Lstat(sub)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := root.Mkdir(sub, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return nil, fmt.Errorf("creating a placeholder: %w", err)
			}
			created = true
		case err != nil:
			return nil, err
		case !fi.IsDir():
			return nil, nil // a file of the user's; the init binds it read-only
		}
		f, err := root.Open(sub)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed under us; start again
			}
			return nil, err
		}
		if created {
			// Best effort: without user xattrs the mark is simply absent.
			_ = unix.Fsetxattr(int(f.Fd()), placeholderXattr, []byte("1"), 0)
		} else if !marked(f) {
			f.Close()
			return nil, nil // the user's own directory
		}
		if err := flock(f, unix.LOCK_SH); err != nil {
			f.Close()
			return nil, err
		}
		if same(root, sub, f) {
			return &heldDir{n: 1, f: f, created: created}, nil
		}
		f.Close() // a remover got there first
	}
	return nil, errors.New("the placeholder kept changing under airlock")
}

// release drops this sandbox's hold on placeholders and removes those that
// no airlock process holds any more, deepest first, if they are still empty.
func (p *placeholders) release(held []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(held) - 1; i >= 0; i-- {
		host := held[i]
		h := p.refs[host]
		if h == nil {
			continue
		}
		if h.n--; h.n > 0 {
			continue
		}
		delete(p.refs, host)
		if (h.created || marked(h.f)) && flock(h.f, unix.LOCK_EX|unix.LOCK_NB) == nil {
			if root, err := os.OpenRoot(filepath.Dir(host)); err == nil {
				name := filepath.Base(host)
				if same(root, name, h.f) {
					_ = root.Remove(name) // fails, and keeps it, if not empty
				}
				root.Close()
			}
		}
		h.f.Close()
	}
}

func marked(f *os.File) bool {
	var buf [8]byte
	n, err := unix.Fgetxattr(int(f.Fd()), placeholderXattr, buf[:])
	return err == nil && n > 0
}

// same reports whether name beneath root is still the directory f holds.
func same(root *os.Root, name string, f *os.File) bool {
	fi, err := root.Lstat(name)
	if err != nil || !fi.IsDir() {
		return false
	}
	held, err := f.Stat()
	if err != nil {
		return false
	}
	return os.SameFile(fi, held)
}

// flock locks f, retrying on EINTR.
func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}

// writableMountOf returns the most specific writable mount holding p below
// its target.
func writableMountOf(mounts []initproto.Mount, p string) (initproto.Mount, bool) {
	best := -1
	for i, m := range mounts {
		if m.Writable && strings.HasPrefix(p, m.Target+"/") && (best < 0 || len(m.Target) > len(mounts[best].Target)) {
			best = i
		}
	}
	if best < 0 {
		return initproto.Mount{}, false
	}
	return mounts[best], true
}
