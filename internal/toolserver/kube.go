package toolserver

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"time"
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

// kubeDialer spawns the helper for each connection: it obtains the
// session's pod, relays the frames to the tool-server in it, and deletes
// the pod and its Secret when the connection ends.
func kubeDialer(o *Options) (func(ctx context.Context) (Conn, error), error) {
	if o.Kube == "" {
		return nil, errors.New("remote " + o.Endpoint + ": a kube endpoint needs the grant's paths (Options.Kube)")
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	helper, err := FindKubeHelper(getenv)
	if err != nil {
		return nil, err
	}
	env := KubeEnv(getenv)[2:]
	args := []string{helper, "connect", o.Kube}
	return func(ctx context.Context) (Conn, error) { return spawn(args, env, o.Stderr, 30*time.Second) }, nil
}
