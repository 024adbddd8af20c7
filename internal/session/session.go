// Package session is the one constructor of what a session runs on: given
// a loaded grant, it picks the records directory (where `airlock log`
// reads), the sandbox backend (native, Podman, unsandboxed or remote
// hands) and how the grant's secrets are read. The Go API (package
// airlock) and every CLI command that runs calls build their sessions
// through Prepare, so they cannot disagree.
package session

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/native"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/direct"
	"github.com/airlockhq/airlock/internal/sandbox/podman"
)

// Config says what to build a session's parts from. Prepare copies it.
type Config struct {
	// Grant is the session's grant, already loaded. Required.
	Grant *grant.Grant
	// RecordsDir is where the audit records go; empty means
	// RecordsDir("", Getenv), the directory `airlock log` reads.
	RecordsDir string
	// Getenv reads the environment: the records directory's variables and
	// the secrets the grant names by "env:" source. Nil means os.Getenv.
	Getenv func(string) string
	// Unsandboxed runs calls as plain child processes, with no isolation.
	Unsandboxed bool
	// Backend and Image choose the sandbox backend: "linux" (the native
	// one) or "podman" with an image pinned by digest; empty takes the
	// grant's [runner] table, and the native backend when that is empty.
	Backend, Image string
	// Remote, when set, connects to remote hands that run the sandboxes;
	// local is the native backend for the calls that carry a secret (nil
	// where this host has none, or with NoLocal). It may add to Private.
	Remote func(local sandbox.Backend, private *[]string) (sandbox.Backend, error)
	// NoLocal builds no local sandbox beside remote hands (a session whose
	// calls carry no secret: airlock exec).
	NoLocal bool
	// Secrets are values of the grant's secrets given up front, by name.
	Secrets map[string]string
	// Private are more of airlock's own files no sandbox may see.
	Private []string
}

// Parts are what sessions over one grant share: open any number of broker
// sessions with Options, and Close the parts after the last.
type Parts struct {
	Grant   *grant.Grant
	Backend sandbox.Backend
	// Root is the directory file tools resolve beneath: "/" in a sandbox,
	// the grant's working directory unsandboxed.
	Root       string
	RecordsDir string
	Secrets    map[string]string
	LoadSecret broker.SecretLoader
	Private    []string
}

// Prepare builds the parts c describes.
func Prepare(c *Config) (*Parts, error) {
	if c == nil || c.Grant == nil {
		return nil, errors.New("session: Config needs a Grant")
	}
	o := *c
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	records, err := RecordsDir(o.RecordsDir, o.Getenv)
	if err != nil {
		return nil, err
	}
	p := &Parts{Grant: o.Grant, RecordsDir: records, Root: "/", Secrets: o.Secrets, LoadSecret: broker.LoadSecretFrom(o.Getenv)}
	private := append([]string(nil), o.Private...)
	switch {
	case o.Remote != nil:
		if o.Unsandboxed {
			return nil, errors.New("unsandboxed with remote hands: remote hands always sandbox")
		}
		// The local sandbox runs only the calls that carry a secret; a
		// host without one (macOS) refuses those and sends the rest.
		var local sandbox.Backend
		if !o.NoLocal {
			if b, err := native.New(&native.Options{StateDir: records}); err == nil {
				local = b
			}
		}
		p.Backend, err = o.Remote(local, &private)
	case o.Unsandboxed:
		p.Backend, err = direct.New(nil)
		p.Root = o.Grant.WorkDir()
	default:
		p.Backend, err = Choose(o.Backend, o.Image, o.Grant, records)
	}
	if err != nil {
		return nil, err
	}
	p.Private = private
	return p, nil
}

// Options returns broker options for one session over p; the caller may
// set more fields (pool, limits, logger) before broker.Open.
func (p *Parts) Options() *broker.Options {
	return &broker.Options{
		Grant: p.Grant, Backend: p.Backend, RecordsDir: p.RecordsDir, ToolRoot: p.Root,
		Secrets: p.Secrets, LoadSecret: p.LoadSecret, Private: append([]string(nil), p.Private...),
	}
}

// Close closes the backend when it holds anything (the Linux backend's
// pool and the teardowns of sandboxes whose calls were already answered,
// a connection to remote hands), waiting until every sandbox is gone.
func (p *Parts) Close() error {
	if c, ok := p.Backend.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// Choose returns the sandbox backend that backend (or, when it is empty,
// the grant's [runner] backend) names: the native one by default, or
// Podman with image or the grant's [runner] image. The native backend
// journals its placeholders under stateDir (none when empty).
func Choose(backend, image string, g *grant.Grant, stateDir string) (sandbox.Backend, error) {
	r := g.Runner()
	if backend == "" {
		backend = r.Backend
	}
	if image == "" {
		image = r.Image
	}
	switch backend {
	case "", grant.BackendLinux:
		return native.New(&native.Options{StateDir: stateDir})
	case grant.BackendPodman:
		if image == "" {
			return nil, fmt.Errorf("the podman backend needs an image pinned by digest: --image NAME@sha256:<digest>, or [runner] image in the grant")
		}
		return podman.New(&podman.Options{Image: image})
	}
	return nil, fmt.Errorf("--backend %q: unknown backend (known: %s, %s)", backend, grant.BackendLinux, grant.BackendPodman)
}

// RecordsDir is where session records go, and where `airlock log` reads
// them: dir when set, else $AIRLOCK_STATE_DIR, else
// $XDG_STATE_HOME/airlock/sessions, else ~/.local/state/airlock/sessions.
func RecordsDir(dir string, getenv func(string) string) (string, error) {
	if dir != "" {
		return filepath.Abs(dir)
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	if d := getenv("AIRLOCK_STATE_DIR"); d != "" {
		return filepath.Abs(d)
	}
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "airlock", "sessions"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", errors.New("no records directory: set AIRLOCK_STATE_DIR or pass --records")
	}
	return filepath.Join(home, ".local", "state", "airlock", "sessions"), nil
}

// KubeconfigFiles are the existing files holding a Kubernetes cluster's
// credentials, absolute: $KUBECONFIG's (a relative entry taken from the
// working directory, as the cluster's client takes it), else
// ~/.kube/config. A session whose hands
// run in the cluster keeps them from its sandboxes (Config.Private).
func KubeconfigFiles(getenv func(string) string) []string {
	var out []string
	list := filepath.SplitList(getenv("KUBECONFIG"))
	if len(list) == 0 && getenv("HOME") != "" {
		list = []string{filepath.Join(getenv("HOME"), ".kube", "config")}
	}
	for _, p := range list {
		// A relative entry is read from the working directory, as the
		// cluster's client reads it: the sandboxes' default grant.
		abs, err := filepath.Abs(p)
		if p == "" || err != nil {
			continue
		}
		if fi, err := os.Stat(abs); err == nil && fi.Mode().IsRegular() {
			out = append(out, abs)
		}
	}
	return out
}
