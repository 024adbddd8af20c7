// Package capsule loads capsules, packaged agents for `airlock run`: either
// a bare WebAssembly module (a .wasm file), or a directory holding
// capsule.toml, which names the module, pins it by sha256, and says what
// the capsule asks to be granted. Resolve turns what a capsule asks for and
// what the user grants into the one grant it runs under, or the list of
// what is missing.
package capsule

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/airlockhq/airlock/grant"
)

// ManifestName is the name of a capsule's manifest in its directory.
const ManifestName = "capsule.toml"

// maxModule caps the size of a module file read into memory.
const maxModule = 256 << 20

// ErrHash is returned when a module's bytes do not match its pinned hash.
var ErrHash = errors.New("the module's sha256 does not match the capsule's")

// Capsule is a loaded capsule: its module's bytes and what it asks for.
type Capsule struct {
	Name, Version string
	// Module is the module file and Wasm its bytes, checked against SHA256.
	Module string
	Wasm   []byte
	SHA256 string
	// Ask is what the capsule asks to be granted; nil for a bare module,
	// which runs under exactly what the user grants.
	Ask *grant.Ask
	// Env are the environment variables the capsule asks for, by name.
	Env []string
}

// Bare reports whether the capsule is a bare module without a manifest.
func (c *Capsule) Bare() bool { return c.Ask == nil }

// manifest is capsule.toml as written.
type manifest struct {
	Name    string `toml:"name"`
	Version string `toml:"version"`
	Module  string `toml:"module"`
	SHA256  string `toml:"sha256"`
	Grant   struct {
		ReadWrite []string `toml:"read_write"`
		ReadOnly  []string `toml:"read_only"`
		Hosts     []string `toml:"hosts"`
		Tools     []string `toml:"tools"`
		Env       []string `toml:"env"`
		Limits    struct {
			Time     string `toml:"time"`
			Memory   string `toml:"memory"`
			Output   string `toml:"output"`
			FileSize string `toml:"file_size"`
		} `toml:"limits"`
	} `toml:"grant"`
}

// The patterns compile on first use, not at every start of the binary.
var (
	nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`) })
	envRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
)

// Load loads the capsule at path: a .wasm file, a directory holding
// capsule.toml, or a capsule.toml file.
func Load(path string) (*Capsule, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("capsule %q: %w", path, err)
	}
	if fi.IsDir() {
		return loadManifest(filepath.Join(path, ManifestName))
	}
	if filepath.Base(path) == ManifestName {
		return loadManifest(path)
	}
	if !strings.HasSuffix(path, ".wasm") {
		return nil, fmt.Errorf("capsule %q: want a .wasm module, a directory holding %s, or a %s", path, ManifestName, ManifestName)
	}
	wasm, err := readModule(path)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(wasm)
	return &Capsule{Name: strings.TrimSuffix(filepath.Base(path), ".wasm"), Module: path, Wasm: wasm, SHA256: hex.EncodeToString(sum[:])}, nil
}

func readModule(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("capsule module: %w", err)
	}
	defer f.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(&limitReader{f: f, left: maxModule + 1}); err != nil {
		return nil, fmt.Errorf("reading the capsule module %q: %w", path, err)
	}
	if b.Len() > maxModule {
		return nil, fmt.Errorf("the capsule module %q is larger than %s", path, grant.FormatSize(maxModule))
	}
	if !bytes.HasPrefix(b.Bytes(), []byte("\x00asm")) {
		return nil, fmt.Errorf("%q is not a WebAssembly module (no \\0asm header)", path)
	}
	return b.Bytes(), nil
}

type limitReader struct {
	f    *os.File
	left int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errors.New("too large")
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.f.Read(p)
	l.left -= int64(n)
	return n, err
}

func loadManifest(path string) (*Capsule, error) {
	var m manifest
	md, err := toml.DecodeFile(path, &m)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var probs []string
	for _, k := range md.Undecoded() {
		probs = append(probs, fmt.Sprintf("unknown key %q", k.String()))
	}
	if !nameRE().MatchString(m.Name) {
		probs = append(probs, fmt.Sprintf("name %q: want 1 to 64 of a-z, 0-9, '.', '_', '-'", m.Name))
	}
	if m.Module == "" || filepath.IsAbs(m.Module) || strings.Contains(filepath.ToSlash(m.Module), "..") {
		probs = append(probs, fmt.Sprintf("module %q: want a file name inside the capsule's directory", m.Module))
	}
	want := strings.ToLower(m.SHA256)
	if len(want) != 64 || strings.Trim(want, "0123456789abcdef") != "" {
		probs = append(probs, fmt.Sprintf("sha256 %q: want the module's SHA-256 as 64 hex digits", m.SHA256))
	}
	ask := &grant.Ask{ReadWrite: m.Grant.ReadWrite, ReadOnly: m.Grant.ReadOnly, Hosts: m.Grant.Hosts, Tools: m.Grant.Tools}
	if ask.Tools == nil {
		ask.Tools = []string{}
	}
	if s := m.Grant.Limits.Time; s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			probs = append(probs, fmt.Sprintf("grant.limits.time %q: not a positive duration (\"90s\", \"10m\")", s))
		}
		ask.Limits.Time = d
	}
	for _, x := range []struct {
		key string
		v   string
		dst *int64
	}{{"memory", m.Grant.Limits.Memory, &ask.Limits.Memory}, {"output", m.Grant.Limits.Output, &ask.Limits.Output}, {"file_size", m.Grant.Limits.FileSize, &ask.Limits.FileSize}} {
		if x.v == "" {
			continue
		}
		n, err := grant.ParseSize(x.v)
		if err != nil {
			probs = append(probs, fmt.Sprintf("grant.limits.%s: %v", x.key, err))
		}
		*x.dst = n
	}
	for _, e := range m.Grant.Env {
		if !envRE().MatchString(e) {
			probs = append(probs, fmt.Sprintf("grant.env %q: want a variable name", e))
		}
	}
	if len(probs) > 0 {
		return nil, fmt.Errorf("%s: %s", path, strings.Join(probs, "; "))
	}
	mod := filepath.Join(filepath.Dir(path), m.Module)
	wasm, err := readModule(mod)
	if errors.Is(err, fs.ErrNotExist) {
		// A capsule checked out from source has its module still to build
		// (the example's build.sh writes it and pins its hash).
		return nil, fmt.Errorf("capsule module %s, named by %s, does not exist: build the capsule first (its build script, as examples/capsule-agent/build.sh, writes it and pins its sha256 in the manifest)", mod, path)
	}
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(wasm)
	got := hex.EncodeToString(sum[:])
	if got != want {
		return nil, fmt.Errorf("%w: %s has sha256 %s, %s pins %s; refusing to run it (rebuild the capsule or update the pin if the change is yours)", ErrHash, mod, got, path, want)
	}
	return &Capsule{Name: m.Name, Version: m.Version, Module: mod, Wasm: wasm, SHA256: got, Ask: ask, Env: slices.Clone(m.Grant.Env)}, nil
}

// Missing is something the capsule asks for that the user did not grant.
type Missing = grant.Missing

// Resolve returns the grant the capsule runs under, given what the user
// grants, and its environment: for a manifest, exactly what it asks for,
// each item checked against user; for a bare module, user itself. env are
// the variables the user grants (K=V); a capsule sees only those it asks
// for (a bare module sees them all). Anything asked for and not granted
// is listed in missing, with the grant nil.
func (c *Capsule) Resolve(user *grant.Grant, cwd string, env []string) (g *grant.Grant, environ []string, missing []Missing, err error) {
	if c.Bare() {
		return user, slices.Clone(env), nil, nil
	}
	given := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		given[k] = v
	}
	for _, name := range c.Env {
		v, ok := given[name]
		if !ok {
			missing = append(missing, Missing{What: "environment variable " + name, Why: "not given", Fix: "--env " + name + "=VALUE"})
			continue
		}
		environ = append(environ, name+"="+v)
	}
	g, more, err := user.Intersect(cwd, *c.Ask)
	if err != nil {
		return nil, nil, nil, err
	}
	missing = append(missing, more...)
	if len(missing) > 0 {
		return nil, nil, missing, nil
	}
	return g, environ, nil, nil
}
