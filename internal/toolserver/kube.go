package toolserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/kube/kubereq"
)

// KubeHelper is the program that reaches hands in a Kubernetes cluster:
// the Kubernetes client lives there, not in airlock, whose every sandbox
// start would pay for its package initialisation.
const KubeHelper = "airlock-kube"

// kubeEnv is what the helper inherits: where the cluster's configuration
// is, and the in-cluster service's address. Nothing else of the broker's.
var kubeEnv = []string{"KUBECONFIG", "HOME", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "AIRLOCK_KUBE_TTL"}

// FindKubeHelper returns the airlock-kube program: $AIRLOCK_KUBE, else
// airlock-kube beside the running program, else on $PATH.
func FindKubeHelper(getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if p := getenv("AIRLOCK_KUBE"); p != "" {
		return p, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), KubeHelper)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(KubeHelper); err == nil {
		return p, nil
	}
	return "", errors.New("kube:// needs the " + KubeHelper + " helper (go build ./cmd/airlock-kube; put it beside airlock, on $PATH or in $AIRLOCK_KUBE): it holds the Kubernetes client")
}

// KubeEnv is the helper's whole environment: a fixed PATH and locale,
// and from getenv only where the cluster's configuration is.
func KubeEnv(getenv func(string) string) []string {
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin", "LANG=C.UTF-8"}
	for _, k := range kubeEnv {
		if v := getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// kubeDialer spawns the helper for each connection: it obtains a pod of
// the session, relays the frames to the tool-server in it, and deletes the
// pod when the connection ends. The session is the Backend's: the dialer
// picks its id once (kubereq.NewSession) and every helper gets it, so the
// session's Secret and workspace claim outlive each connection; the
// release it returns ("airlock-kube release", run by Close) deletes them.
func kubeDialer(o *Options) (func(ctx context.Context) (Conn, error), func(ctx context.Context) error, error) {
	if o.Kube == "" {
		return nil, nil, errors.New("remote " + o.Endpoint + ": a kube endpoint needs the grant's paths (Options.Kube)")
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	helper, err := FindKubeHelper(getenv)
	if err != nil {
		return nil, nil, err
	}
	req, err := kubereq.Decode(o.Kube)
	if err != nil {
		return nil, nil, fmt.Errorf("remote %s: %w", o.Endpoint, err)
	}
	if req.Session == "" {
		req.Session = kubereq.NewSession()
	}
	raw := req.Encode()
	env := KubeEnv(getenv)[2:]
	// The session key: every helper of the session gets it first on its
	// stdin, never in its arguments or environment (kubereq.WriteKey).
	key := kubereq.NewKey()
	dial := func(ctx context.Context) (Conn, error) {
		return spawn([]string{helper, "connect", raw}, env, o.Stderr, 30*time.Second,
			func(w io.Writer) error { return kubereq.WriteKey(w, key) })
	}
	release := func(ctx context.Context) error {
		cmd := exec.CommandContext(ctx, helper, "release", raw)
		cmd.Env = KubeEnv(getenv)
		cmd.Stdin = nil
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s release: %w: %s", KubeHelper, err, strings.TrimSpace(out.String()))
		}
		return nil
	}
	return dial, release, nil
}
