package linux

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

// placeholders tracks the empty directories the backend creates on the host
// for protected paths that do not exist yet (.git/hooks, .bashrc, .vscode,
// ...), so that the init can mount them read-only and the sandbox cannot
// create them. Every sandbox of this process that relies on a placeholder
// holds it; the last one to finish removes it if it is still empty. Creating
// them on the host before the sandbox starts, under one lock, means
// concurrent sandboxes over the same tree never see a placeholder vanish
// between their look and their mount.
//
// Two separate airlock processes over the same tree do not share the count:
// one may remove a placeholder the other has mounted, which detaches that
// mount in the other's namespace. Run one broker per tree (one MCP server,
// one session) where that matters.
type placeholders struct {
	mu   sync.Mutex
	refs map[string]int // host path -> sandboxes holding it
}

// hold creates, for each read-only path of cfg that lies inside a writable
// mount and does not exist, every missing directory up to it, and counts this
// sandbox as holding each placeholder it relies on. It returns what to pass to
// release. Directories are created through os.Root, so a symlink in the tree
// cannot lead the backend outside the mount.
func (p *placeholders) hold(cfg *initproto.Config) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refs == nil {
		p.refs = map[string]int{}
	}
	var held []string
	for _, ro := range cfg.ReadOnly {
		m, ok := writableMountOf(cfg.Mounts, ro)
		if !ok {
			continue
		}
		rel := strings.TrimPrefix(ro, m.Target+"/")
		root, err := os.OpenRoot(m.Source)
		if err != nil {
			return held, fmt.Errorf("opening %s for protected paths: %w", m.Source, err)
		}
		parts := strings.Split(rel, "/")
		for i := range parts {
			sub := strings.Join(parts[:i+1], "/")
			host := filepath.Join(m.Source, sub)
			_, err := root.Lstat(sub)
			switch {
			case err == nil:
				if p.refs[host] > 0 { // another sandbox's placeholder
					p.refs[host]++
					held = append(held, host)
				}
				continue
			case !errors.Is(err, fs.ErrNotExist):
				root.Close()
				return held, fmt.Errorf("checking protected path %s: %w", host, err)
			}
			if err := root.Mkdir(sub, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				root.Close()
				return held, fmt.Errorf("creating a placeholder for protected path %s: %w", host, err)
			}
			p.refs[host]++
			held = append(held, host)
		}
		root.Close()
	}
	return held, nil
}

// release drops this sandbox's hold on placeholders and removes those no
// sandbox holds any more, deepest first, if they are still empty.
func (p *placeholders) release(held []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(held) - 1; i >= 0; i-- {
		h := held[i]
		if p.refs[h]--; p.refs[h] > 0 {
			continue
		}
		delete(p.refs, h)
		root, err := os.OpenRoot(filepath.Dir(h))
		if err != nil {
			continue
		}
		if fi, err := root.Lstat(filepath.Base(h)); err == nil && fi.IsDir() {
			_ = root.Remove(filepath.Base(h)) // fails, and keeps it, if not empty
		}
		root.Close()
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
