package interop_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/containtest"
	"github.com/airlockhq/airlock/internal/kube"
	"github.com/airlockhq/airlock/internal/kube/kubereq"
	"github.com/airlockhq/airlock/internal/toolserver"
)

// TestHandsUsernsContainment runs the containment suite against the hands
// in the userns pod (remote.pod_security = "userns") under runc, with
// podman standing in for the kubelet as in TestHandsRestrictedPod: the
// pod is kube.PodSpec's for the suite's grant, its granted paths are the
// suite's directories (owned, as the pod's workspace would be, by the
// pod's user in its uid range), and a broker session reaches its
// tool-server over TLS WebSocket. The pod has no cgroup of its own, so
// the grant accepts unenforced limits and the fork and memory bombs skip.
func TestHandsUsernsContainment(t *testing.T) {
	tag := handsImage(t)
	containtest.Run(t, func(t *testing.T, g *grant.Grant) *broker.Session {
		r, err := kubereq.FromGrant("kube://agents/hands", g)
		if err != nil {
			t.Fatal(err)
		}
		h := kube.HandsFor(r)
		h.Name, h.Namespace, h.Session, h.Broker, h.Template = "airlock-test-1", "agents", "test", "test", "hands"
		h.Image, h.Secret, h.Expires = tag, "airlock-test", time.Now().Add(time.Hour)
		h.PodSecurity = grant.PodSecurityUserns
		spec := kube.PodSpec(&h)

		dir := t.TempDir()
		certFile, keyFile, pool := selfSigned(t, t.TempDir())
		cert, _ := os.ReadFile(certFile)
		key, _ := os.ReadFile(keyFile)
		token := "userns-pod-token-" + randomHex(8)
		k := &kubelet{
			dir:        dir,
			secret:     map[string][]byte{"token": []byte(token), "tls.crt": cert, "tls.key": key},
			runtimes:   map[string][]string{"": {"--runtime", "runc"}},
			emptyDirs:  map[string]string{},
			host:       []string{"--network=host", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"},
			usernsBase: 30001 * usernsSize,
			seccompDir: filepath.Join(dir, "seccomp"),
		}
		profile, err := os.ReadFile("../../deploy/seccomp/hands.json")
		if err != nil {
			t.Fatal(err)
		}
		installed := filepath.Join(k.seccompDir, kube.SeccompProfile)
		if err := os.MkdirAll(filepath.Dir(installed), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(installed, profile, 0o644); err != nil {
			t.Fatal(err)
		}
		// The granted paths are the suite's directories, their files the
		// pod's user's, as a workspace in the pod would be.
		owner := k.usernsBase + kube.UID
		for _, m := range h.Mounts {
			k.emptyDirs[m.Path] = m.Path
			// A session the suite opens beside its first finds the trees
			// in use: a placeholder an earlier call made may go while
			// they are walked.
			err := filepath.Walk(m.Path, func(p string, _ os.FileInfo, err error) error {
				if err == nil {
					err = os.Lchown(p, owner, owner)
				}
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		gl, run, image, err := k.podmanArgs(spec)
		if err != nil {
			t.Fatal(err)
		}
		args := slices.Clone(spec.Containers[0].Args)
		for i := range args {
			if args[i] == "--listen" {
				args[i+1] = "127.0.0.1:0" // startPod reads the port it bound
			}
		}
		addr := startPod(t, gl, run, image, args)
		b, err := toolserver.New(context.Background(), &toolserver.Options{
			Endpoint: "wss://" + addr, Token: token, TLS: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		s, err := broker.Open(&broker.Options{Grant: g, Backend: b, RecordsDir: t.TempDir(), Pool: -1})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, &containtest.Options{AllowUnenforced: true})
}
