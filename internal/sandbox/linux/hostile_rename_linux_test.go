package linux_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// writeTree creates files (path -> content; a trailing slash makes a
// directory) below root.
func writeTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(root, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHostileRenameAncestor: renaming, removing or replacing any ancestor
// of a denied, read-only or protected path (up to the granted root) fails,
// in every tree shape, so the protection cannot be carried away from the
// path it guards. Each attack is a class: mv of every ancestor, mv onto
// one, rm -rf, and recreating the path beside the moved-away one.
func TestHostileRenameAncestor(t *testing.T) {
	type tc struct {
		name    string
		files   map[string]string // below W; "CANARY" is replaced by the canary
		masks   []string          // below W
		ro      []string          // protected paths below W
		roGrant []string          // nested read-only grants below W
		attack  string            // run with cwd W
		keep    map[string]string // host files below W that must keep their content
	}
	cases := []tc{{
		name:   "deny nested",
		files:  map[string]string{"a/secret": "CANARY"},
		masks:  []string{"a/secret"},
		attack: "mv a a2; cat a2/secret; mkdir z; mv z a; rm -rf a; cat a/secret; mv a/secret s; cat s; ln a/secret hl; cat hl",
		keep:   map[string]string{"a/secret": "CANARY"},
	}, {
		name:   "deny deep",
		files:  map[string]string{"a/b/c/secret": "CANARY"},
		masks:  []string{"a/b/c/secret"},
		attack: "mv a x; mv a/b x; mv a/b/c x; cat x/secret x/c/secret x/b/c/secret; cd a/b && mv c ../../y; cd " + "$W" + "; cat y/secret",
		keep:   map[string]string{"a/b/c/secret": "CANARY"},
	}, {
		name:   "deny at the root",
		files:  map[string]string{"secret": "CANARY"},
		masks:  []string{"secret"},
		attack: "mv secret s; rm -f secret; cat s secret",
		keep:   map[string]string{"secret": "CANARY"},
	}, {
		name:    "read-only grant nested",
		files:   map[string]string{"a/b/f": "CANARY"},
		roGrant: []string{"a/b"},
		attack:  "mv a a2 && mkdir -p a/b && echo replaced > a/b/f; rm -rf a; mkdir -p a/b; echo replaced > a/b/f",
		keep:    map[string]string{"a/b/f": "CANARY"},
	}, {
		name:   "git repository",
		files:  map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/config": "CANARY", ".git/hooks/": "", ".git/objects/": "", ".git/refs/": ""},
		ro:     []string{".git/hooks", ".git/config"},
		attack: "mv .git .g && mkdir -p .git/hooks && cp -r .g/HEAD .g/objects .g/refs .git/ && printf '[core]\\n\\tfsmonitor = \"touch /tmp/pwned; false\"\\n' > .git/config; rm -rf .git; echo x > .git/config",
		keep:   map[string]string{".git/config": "CANARY"},
	}, {
		name:   "nested repository",
		files:  map[string]string{"sub/repo/.git/config": "CANARY", "sub/repo/f": "x"},
		ro:     []string{"sub/repo/.git"},
		attack: "mv sub s2; mv sub/repo r2; mv sub/repo/.git g2; rm -rf sub; mkdir -p sub/repo/.git; echo evil > sub/repo/.git/config",
		keep:   map[string]string{"sub/repo/.git/config": "CANARY"},
	}, {
		name:    "deny inside read-only inside read-write",
		files:   map[string]string{"a/b/secret": "CANARY", "a/b/other": "o"},
		roGrant: []string{"a"},
		masks:   []string{"a/b/secret"},
		attack:  "mv a x; cat x/b/secret; mv a/b a/c; cat a/c/secret; rm -rf a",
		keep:    map[string]string{"a/b/secret": "CANARY", "a/b/other": "o"},
	}}
	inModes(t, func(t *testing.T, run func(*sandbox.Spec, string) out) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				d := newDirs(t)
				files := map[string]string{}
				for p, v := range c.files {
					files[p] = strings.ReplaceAll(v, "CANARY", d.canary)
				}
				writeTree(t, d.W, files)
				spec := &sandbox.Spec{Mounts: []sandbox.Mount{{Source: d.W, Writable: true}}, Cwd: d.W, Env: []string{"PATH=/usr/bin:/bin", "W=" + d.W}}
				for _, p := range c.roGrant {
					spec.Mounts = append(spec.Mounts, sandbox.Mount{Source: filepath.Join(d.W, p)})
				}
				for _, p := range c.masks {
					spec.Masks = append(spec.Masks, filepath.Join(d.W, p))
				}
				for _, p := range c.ro {
					spec.ReadOnly = append(spec.ReadOnly, filepath.Join(d.W, p))
				}
				o := run(spec, c.attack+"; true")
				d.noCanary(t, o)
				for p, want := range c.keep {
					want = strings.ReplaceAll(want, "CANARY", d.canary)
					got, err := os.ReadFile(filepath.Join(d.W, p))
					if err != nil || string(got) != want {
						t.Errorf("host %s = %q, %v; want %q (attack output %q %q)", p, got, err, want, o.stdout, o.stderr)
					}
				}
				if !strings.Contains(o.stderr, "busy") {
					t.Errorf("no rename was refused as busy: stderr %q", o.stderr)
				}
				// A later call still sees every protection where it was.
				if len(c.masks) > 0 {
					d.noCanary(t, run(spec, "cat "+spec.Masks[0]+"; true"))
				}
			})
		}
	})
}

// TestProtectedSymlinkCovered: a symlink planted at a protected or denied
// name (or at an ancestor of one) is covered by an empty read-only file:
// nothing follows it, nothing can replace it, the call still runs, and the
// host's link is unchanged. (Issue 19.5: it used to fail every call.)
func TestProtectedSymlinkCovered(t *testing.T) {
	inModes(t, func(t *testing.T, run func(*sandbox.Spec, string) out) {
		d := newDirs(t)
		writeTree(t, d.W, map[string]string{"sub/": "", "data": "mine"})
		for link, to := range map[string]string{"sub/.bashrc": "/nonexistent", ".vscode": d.O, "secret": d.O + "/canary", "anc": d.O} {
			if err := os.Symlink(to, filepath.Join(d.W, link)); err != nil {
				t.Fatal(err)
			}
		}
		spec := &sandbox.Spec{
			Mounts:   []sandbox.Mount{{Source: d.W, Writable: true}},
			ReadOnly: []string{filepath.Join(d.W, "sub/.bashrc"), filepath.Join(d.W, ".vscode"), filepath.Join(d.W, "anc/.git/hooks")},
			Masks:    []string{filepath.Join(d.W, "secret")},
			Cwd:      d.W,
			Env:      []string{"PATH=/usr/bin:/bin"},
		}
		o := run(spec, "cat sub/.bashrc .vscode/x secret anc/canary; ls .vscode; "+
			"rm -f sub/.bashrc; ln -sf /etc/passwd sub/.bashrc; echo evil > sub/.bashrc; mv .vscode v; echo ok > data; cat data")
		d.noCanary(t, o)
		if !strings.Contains(o.stdout, "ok") {
			t.Fatalf("the call did not run normally: %q %q", o.stdout, o.stderr)
		}
		for link, to := range map[string]string{"sub/.bashrc": "/nonexistent", ".vscode": d.O, "secret": d.O + "/canary", "anc": d.O} {
			got, err := os.Readlink(filepath.Join(d.W, link))
			if err != nil || got != to {
				t.Errorf("host link %s = %q, %v; want it unchanged (%q)", link, got, err, to)
			}
		}
	})
}

// TestPlaceholderKinds: a missing protected name is held as the right kind
// (an empty read-only file for a file name, an empty directory for a
// directory name), a missing denied path as an empty file, so neither a
// file nor a directory of that name can be created; the sandbox finds the
// list of placeholders at /run/airlock/placeholders; nothing stays behind.
func TestPlaceholderKinds(t *testing.T) {
	inModes(t, func(t *testing.T, run func(*sandbox.Spec, string) out) {
		d := newDirs(t)
		rc, vscode, env := filepath.Join(d.W, ".bashrc"), filepath.Join(d.W, ".vscode"), filepath.Join(d.W, ".env")
		spec := &sandbox.Spec{
			Mounts:       []sandbox.Mount{{Source: d.W, Writable: true}},
			ReadOnly:     []string{rc, vscode},
			ReadOnlyDirs: []string{vscode},
			Masks:        []string{env},
			Cwd:          d.W,
			Env:          []string{"PATH=/usr/bin:/bin"},
		}
		o := run(spec, "test -f .bashrc && echo rc-file; test -d .vscode && echo vscode-dir; cat .bashrc; "+
			"echo x > .bashrc || echo rc-refused; mkdir .vscode/a || echo vscode-refused; echo KEY=1 > .env || echo env-refused; mkdir .env || echo envdir-refused; "+
			"cat /run/airlock/placeholders")
		for _, want := range []string{"rc-file", "vscode-dir", "rc-refused", "vscode-refused", "env-refused", "envdir-refused", rc + "\n", vscode + "\n", env + "\n"} {
			if !strings.Contains(o.stdout, want) {
				t.Errorf("want %q in stdout %q (stderr %q)", want, o.stdout, o.stderr)
			}
		}
		entries, err := os.ReadDir(d.W)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			t.Errorf("left in the tree: %s", e.Name())
		}
	})
}

// TestProtectedHardLinkRefused: a protected or denied file with another
// name is refused with a sentence, since the other name would stay open.
func TestProtectedHardLinkRefused(t *testing.T) {
	d := newDirs(t)
	secret := filepath.Join(d.W, "secret")
	writeTree(t, d.W, map[string]string{"secret": d.canary})
	if err := os.Link(secret, filepath.Join(d.W, "other")); err != nil {
		t.Fatal(err)
	}
	_, err := tryRun(t, &sandbox.Spec{Mounts: []sandbox.Mount{{Source: d.W, Writable: true}}, Masks: []string{secret}, Command: []string{"true"}})
	if err == nil || !strings.Contains(err.Error(), "hard links") {
		t.Fatalf("err %v, want a refusal naming the hard links", err)
	}
}

// TestSocketUnderReadOnlyGrant (issue 19.15): a host service's Unix socket
// under a read-only grant. With Landlock ABI 9 connect(2) is refused; below
// it the kernel has no way to refuse it, and the result says so by listing
// "landlock-unix" as missing (docs/protected-paths.md says the same).
func TestSocketUnderReadOnlyGrant(t *testing.T) {
	needPython(t)
	d := newDirs(t)
	sock := filepath.Join(d.R, "service.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	o := sh(t, `python3 -c 'import socket,sys
s=socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1]); print("connected")
except OSError as e:
    print("refused", e.errno)' `+sock, d.mounts()...)
	switch {
	case contains(o.res.Isolation.Features, "landlock-unix"):
		if !strings.Contains(o.stdout, "refused") {
			t.Fatalf("with Landlock ABI 9 the connect went through: %q %q", o.stdout, o.stderr)
		}
	case !contains(o.res.Isolation.Missing, "landlock-unix"):
		t.Fatalf("neither a feature nor missing: %+v", o.res.Isolation)
	case !strings.Contains(o.stdout, "connected"):
		t.Fatalf("the documented gap changed: %q %q (update the docs)", o.stdout, o.stderr)
	}
}
