package grant

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// maxSymlinks bounds how many symlinks one resolution follows (as Linux's 40).
const maxSymlinks = 40

// maxPath is the longest path Linux takes (PATH_MAX, 4096 bytes with its
// NUL), and the longest resolution is allowed to build; maxTrail bounds the
// locations one resolution visits (the most a path of maxPath bytes has
// without symlinks). A path is a model's argument: each location visited is
// a string kept for the checks, so an unbounded one made the broker's memory
// and time grow with the square of its length (a 120 KB path took 3.5 GB).
const (
	maxPath  = 4095
	maxTrail = 2048
)

// errDotDotAfterMissing is returned when a symlink target climbs out of a
// directory that does not exist; the kernel would fail, so we refuse.
var errDotDotAfterMissing = errors.New("a symlink target climbs (..) out of a directory that does not exist")

// resolved is a path with its symlinks resolved.
type resolved struct {
	path    string   // absolute, clean, no symlink among the existing components
	missing int      // how many trailing components do not exist
	trail   []string // every location visited on the way, symlinks included
	links   []string // the locations that were symlinks
}

// resolve resolves every symlink of the absolute, clean path p component by
// component, as the kernel would. The existing prefix is resolved and the
// missing tail appended; a missing component is never a reason to fall back to
// the raw path. Only Lstat and Readlink touch the file system.
func resolve(p string) (resolved, error) {
	if !filepath.IsAbs(p) {
		return resolved{}, fmt.Errorf("%q is not absolute", p)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return resolved{}, fmt.Errorf("%q contains a NUL byte", p)
	}
	if len(p) > maxPath {
		return resolved{}, fmt.Errorf("a path of %d bytes is longer than the %d Linux takes", len(p), maxPath+1)
	}
	var r resolved
	cur := "/"
	rest := splitPath(p)
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if r.missing > 0 {
				return resolved{}, fmt.Errorf("resolving %q: %w", p, errDotDotAfterMissing)
			}
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		if len(next) > maxPath {
			return resolved{}, fmt.Errorf("resolving %q: the path it leads to is longer than the %d bytes Linux takes", clipPath(p), maxPath+1)
		}
		if len(r.trail) == maxTrail {
			return resolved{}, fmt.Errorf("resolving %q: it passes through more than %d locations", clipPath(p), maxTrail)
		}
		r.trail = append(r.trail, next)
		if r.missing > 0 {
			cur = next
			r.missing++
			continue
		}
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			cur = next
			r.missing = 1
			continue
		case err != nil:
			return resolved{}, fmt.Errorf("resolving %q: %w", p, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			r.links = append(r.links, next)
			links++
			if links > maxSymlinks {
				return resolved{}, fmt.Errorf("resolving %q: too many symlinks", p)
			}
			target, err := os.Readlink(next)
			if err != nil {
				return resolved{}, fmt.Errorf("resolving %q: %w", p, err)
			}
			if filepath.IsAbs(target) {
				cur = "/"
			}
			rest = append(splitPath(target), rest...)
		case !fi.IsDir() && len(rest) > 0 && hasName(rest):
			return resolved{}, fmt.Errorf("resolving %q: %q is not a directory", p, next)
		default:
			cur = next
		}
	}
	r.path = cur
	return r, nil
}

// clipPath shortens a long path for an error message.
func clipPath(p string) string {
	if len(p) <= 200 {
		return p
	}
	return p[:100] + "…" + p[len(p)-100:]
}

func splitPath(p string) []string {
	return strings.Split(p, "/")
}

// hasName reports whether components hold anything but "" and ".".
func hasName(cs []string) bool {
	for _, c := range cs {
		if c != "" && c != "." {
			return true
		}
	}
	return false
}

// within reports whether p is root or lies below it, comparing whole
// components: /tmp/ws holds /tmp/ws/a but not /tmp/ws-evil.
func within(p, root string) bool {
	if root == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == root || strings.HasPrefix(p, root) && p[len(root)] == '/'
}

// relParts returns the components of p below root (p must be within root).
func relParts(p, root string) []string {
	rel := strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
	if rel == "" {
		return nil
	}
	return strings.Split(rel, "/")
}

// Kernel file systems that are never granted, and system trees that are
// never granted read-write.
var (
	neverMount    = []string{"/proc", "/sys", "/dev"}
	neverWritable = []string{"/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/run", "/var/run"}
)

// NeverMounted reports whether no grant can make the existing path p
// visible inside a sandbox: with its symlinks resolved it lies in one of the
// kernel file systems every grant refuses to mount (/proc, /sys, /dev), and
// the only directory above them, "/", is refused as well. What the broker
// keeps there (an egress proxy's socket) no sandbox of any session can
// reach through its grant.
func NeverMounted(p string) bool {
	if !filepath.IsAbs(p) {
		return false
	}
	r, err := resolve(filepath.Clean(p))
	if err != nil || r.missing > 0 {
		return false
	}
	for _, n := range neverMount {
		if within(r.path, n) {
			return true
		}
	}
	return false
}

// The host's shared runtime and temporary directories, where programs of
// every session keep their Unix sockets: the Docker daemon's, D-Bus's and
// systemd's in /run, the user's own in $XDG_RUNTIME_DIR, tmux's, X11's and
// ssh-agent's in /tmp. A sandbox that sees a socket can connect to it and
// have its program act outside the sandbox (docker run, systemd-run, tmux
// send-keys), and a read-only mount does not stop that: connect(2) is not
// a write the mount's mode refuses, and a path socket is reached across
// network namespaces. So no grant, read-only or read-write, may be one of
// these directories, lie in a runtime one, or hold one; a directory made
// inside /tmp (mktemp -d) holds only what is put there.
var (
	runtimeDirs = []string{"/run"}
	sharedTemp  = []string{"/tmp", "/var/tmp"}
)

// socketDirOverlap says why the resolved path p may not be granted because
// of the host's sockets (see runtimeDirs), or returns "".
func socketDirOverlap(p string) string {
	type dir struct{ path, what string }
	var dirs []dir
	for _, d := range runtimeDirs {
		dirs = append(dirs, dir{d, "runtime"})
	}
	// A runtime directory set to a shared temporary one (or to "/") is
	// ruled as that, not as a tree no grant may lie in.
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) && filepath.Clean(x) != "/" && !slices.Contains(sharedTemp, filepath.Clean(x)) {
		dirs = append(dirs, dir{x, "xdg"})
	}
	for _, d := range sharedTemp {
		dirs = append(dirs, dir{d, "temp"})
	}
	if x := tempDirEnv(); x != "" {
		dirs = append(dirs, dir{x, "tmpdir"})
	}
	for i := range dirs {
		res, err := resolve(filepath.Clean(dirs[i].path))
		if err != nil || res.missing > 0 {
			dirs[i].path = ""
			continue
		}
		dirs[i].path = res.path
	}
	// Being or lying in one first, then holding one, so each gets the
	// sentence that fits it best.
	for _, d := range dirs {
		at := d.path
		switch {
		case at == "":
		case d.what == "runtime" && within(p, at):
			return fmt.Sprintf("%s holds the host's sockets (the Docker daemon's, D-Bus's, systemd's), which a sandbox could connect to whatever the mount's mode; copy what the calls need to a directory outside it and grant that", at)
		case d.what == "xdg" && within(p, at):
			return fmt.Sprintf("it lies in the session's runtime directory ($XDG_RUNTIME_DIR, %s), which holds the user's sockets (D-Bus, systemd --user, ssh-agent, gpg-agent), which a sandbox could connect to whatever the mount's mode; grant a directory elsewhere", at)
		case d.what == "temp" && p == at:
			return "it is the host's shared temporary directory, where other programs keep their sockets (tmux, X11, ssh-agent), which a sandbox could connect to whatever the mount's mode; grant a directory of its own inside it (mktemp -d)"
		case d.what == "tmpdir" && p == at:
			return fmt.Sprintf("it is the host's temporary directory ($TMPDIR, %s), where other programs keep their sockets (ssh-agent, editors, test servers), which a sandbox could connect to whatever the mount's mode; grant a directory of its own inside it (mktemp -d)", at)
		}
	}
	for _, d := range dirs {
		// A tree that holds $TMPDIR has it hidden instead (hideTempDir):
		// it is often in a home directory or a project.
		if at := d.path; at != "" && d.what != "tmpdir" && within(at, p) {
			return fmt.Sprintf("it holds %s, where other programs keep their sockets (tmux, X11, ssh-agent, D-Bus, Docker), which a sandbox could connect to whatever the mount's mode; grant the directories inside it that are needed", at)
		}
	}
	return ""
}

// tempDirEnv returns $TMPDIR, clean, when it names a directory of its own
// for temporary files (pam_tmpdir's /tmp/user/1000, a home directory's
// tmp, a build's): absolute, and not "/", /tmp or /var/tmp, which
// socketDirOverlap rules already; else "".
func tempDirEnv() string {
	x := os.Getenv("TMPDIR")
	if !filepath.IsAbs(x) {
		return ""
	}
	x = filepath.Clean(x)
	if x == "/" || slices.Contains(sharedTemp, x) {
		return ""
	}
	return x
}

// tempDirRule names the host's temporary directory ($TMPDIR) hidden
// inside a granted tree (hideTempDir).
const tempDirRule = "the host's temporary directory"

// hideTempDir denies $TMPDIR when a granted directory holds it, as
// paths.deny would: programs make their Unix sockets there (ssh-agent,
// editors, test servers) at any time, faster than any scan for sockets
// (hideSockets sees those there when the grant is built), and a sandbox
// that sees one connects to it whatever the mount's mode. A directory of
// a home directory that is $TMPDIR (~/tmp, which splitHomes grants
// read-write) is not granted but hidden under the home's read-only top.
// A granted directory inside $TMPDIR is the grant's to give, as one
// inside /tmp: then $TMPDIR is left as it is. It records the path in
// g.tempDir.
func (g *Grant) hideTempDir() {
	x := tempDirEnv()
	if x == "" {
		return
	}
	res, err := resolve(x)
	if err != nil || res.missing > 0 {
		return
	}
	t := res.path
	g.roots = slices.DeleteFunc(g.roots, func(r root) bool { return r.homeDir && r.path == t })
	owner, ok := g.rootOf(t)
	if !ok || owner.path == t || slices.ContainsFunc(g.roots, func(r root) bool { return within(r.path, t) }) {
		return
	}
	g.deny = append(g.deny, t)
	g.tempDir = t
}

// passesThroughProc reports whether resolution visited /proc, whose magic
// links do not name real paths.
func (r resolved) passesThroughProc() bool {
	for _, t := range r.trail {
		if within(t, "/proc") {
			return true
		}
	}
	return false
}

// root is a granted path, resolved.
type root struct {
	given    string // as written in the grant
	path     string // resolved
	dir      bool
	writable bool
	links    []string // symlinks the given path passed through
	// homeTop says the root is a home directory granted read-write, left
	// read-only at its top by splitHomes.
	homeTop bool
	// homeDir says the root is a directory of such a home directory,
	// whose missing top-level names are not held (see splitHomes).
	homeDir bool
}

// resolveRoot resolves a granted path and refuses one that cannot be
// mounted safely, saying why.
func resolveRoot(given, base string, writable bool) (root, error) {
	mode := "read-only"
	if writable {
		mode = "read-write"
	}
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("cannot mount %q %s: %s", given, mode, fmt.Sprintf(format, args...))
	}
	if given == "" {
		return root{}, errors.New("cannot mount an empty path")
	}
	if why := tildePath(given); why != "" {
		return root{}, refuse("%s", why)
	}
	abs := given
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(base, abs)
	}
	r, err := resolve(filepath.Clean(abs))
	if err != nil {
		return root{}, refuse("%v", err)
	}
	if r.missing > 0 {
		return root{}, refuse("no such file or directory")
	}
	if r.passesThroughProc() {
		return root{}, refuse("it lies in /proc")
	}
	if why := unsafeRoot(r.path, writable); why != "" {
		return root{}, refuse("%s", why)
	}
	fi, err := os.Stat(r.path)
	if err != nil {
		return root{}, refuse("%v", err)
	}
	if !fi.IsDir() && !fi.Mode().IsRegular() {
		return root{}, refuse("it is a %s, not a directory or regular file", fileKind(fi.Mode()))
	}
	return root{given: given, path: r.path, dir: fi.IsDir(), writable: writable, links: r.links}, nil
}

// unsafeRoot says why the resolved path p may not be granted (read-write
// when writable), or returns "".
func unsafeRoot(p string, writable bool) string {
	if p == "/" {
		return "it is the whole file system"
	}
	for _, n := range neverMount {
		if within(p, n) {
			return n + " is a kernel file system"
		}
	}
	if why := socketDirOverlap(p); why != "" {
		return why
	}
	if writable {
		for _, n := range neverWritable {
			if within(p, n) {
				return n + " is a system directory"
			}
		}
		if p == "/var" || p == "/home" {
			return "it holds other programs' or users' data"
		}
	}
	return ""
}

// aliasRefusal says why a granted path is refused for what a bind mount
// makes it show (mountAliases): a path it shows too, or one a mount
// inside it shows, that no grant may give (unsafeRoot); or returns "".
// Without it, a bind mount of / at /host let --rw /host/etc write /etc,
// and a read-only tree holding /host showed the whole file system.
func aliasRefusal(self []string, held []heldMount, writable bool) string {
	for _, a := range self {
		if why := unsafeRoot(a, writable); why != "" {
			return fmt.Sprintf("it is %s too, through a bind mount, and %s", a, why)
		}
	}
	for _, h := range held {
		if why := unsafeRoot(h.alias, writable); why != "" {
			return fmt.Sprintf("it holds %s, which shows %s (a bind mount), and of that: %s; grant directories that hold no such mount, or unmount it", h.point, h.alias, why)
		}
	}
	return ""
}

func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeDevice != 0:
		return "device"
	default:
		return "special file"
	}
}

// tildePath says why the path p, as a grant writes it, is refused for
// starting with "~" (a home directory, in a shell), or returns "". No
// shell reads a grant: its relative paths start from the grant file's
// directory, so "~/.aws" in paths.deny denied a "~" directory there that
// did not exist, and the sandbox read the ~/.aws it was meant to hide.
func tildePath(p string) string {
	if !strings.HasPrefix(p, "~") {
		return ""
	}
	return fmt.Sprintf("%q starts with \"~\", which a grant does not expand to a home directory (its relative paths start from the grant file's directory); write the path absolute (or \"./%s\" for a file named so)", p, p)
}

// plantedLink returns the first of links that lies inside a read-write
// directory root, where a sandbox could have planted it, and that root.
func plantedLink(links []string, roots []root) (string, root, bool) {
	for _, l := range links {
		for _, w := range roots {
			if w.writable && w.dir && within(l, w.path) && l != w.path {
				return l, w, true
			}
		}
	}
	return "", root{}, false
}
