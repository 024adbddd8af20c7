package toolserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/kube/kubereq"
	"github.com/airlockhq/airlock/internal/sandboxtest"
	"github.com/airlockhq/airlock/internal/toolserver"
)

// fakeKubeHelper is the test binary standing in for airlock-kube connect:
// it checks the environment it was given holds nothing but the allowed
// variables, and serves the request's first path over stdio.
func fakeKubeHelper(raw string) int {
	allowed := map[string]bool{"PATH": true, "LANG": true, "KUBECONFIG": true, "HOME": true,
		"KUBERNETES_SERVICE_HOST": true, "KUBERNETES_SERVICE_PORT": true, "AIRLOCK_KUBE_TTL": true}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !allowed[k] {
			fmt.Fprintf(os.Stderr, "the helper inherited %s\n", k)
			return 3
		}
	}
	if os.Getenv("KUBECONFIG") != "/kube/config-test" {
		fmt.Fprintln(os.Stderr, "the helper did not get $KUBECONFIG")
		return 3
	}
	req, err := kubereq.Decode(raw)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	g, err := grant.FromFlags(req.Mounts[0].Path, grant.Flags{ReadWrite: []string{req.Mounts[0].Path}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	b, err := sandboxtest.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv, err := toolserver.NewServer(&toolserver.ServerOptions{Grant: g, Backend: b, Name: "kube-helper", Heartbeat: testHeartbeat})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := srv.ServeConn(context.Background(), toolserver.StreamConn(os.Stdin, os.Stdout, nil)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestKubeEndpointSpawnsTheHelper: a kube:// endpoint spawns the helper
// named by $AIRLOCK_KUBE with the request, the cluster's configuration and
// nothing else of the broker's environment, and calls run through it.
func TestKubeEndpointSpawnsTheHelper(t *testing.T) {
	w := newWorkspace(t)
	sandboxtest.Native(t)
	req, err := kubereq.FromGrant("kube://agents/hands", w.grant)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AIRLOCK_KUBE": os.Args[0], "KUBECONFIG": "/kube/config-test", "OPENAI_API_KEY": "sk-must-not-pass"}
	b, err := toolserver.New(context.Background(), &toolserver.Options{
		Endpoint: "kube://agents/hands", Kube: req.Encode(), Getenv: func(k string) string { return env[k] },
		Heartbeat: testHeartbeat, Stderr: os.Stderr,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s := w.session(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := s.Call(ctx, "read_file", json.RawMessage(`{"path":"a.txt"}`))
	if err != nil || res.Class != broker.ClassOK || !strings.Contains(res.Output.Content, "alpha") {
		t.Fatalf("read_file through the helper: %v %+v", err, res)
	}
}

// TestKubeEndpointNeedsTheHelper: without the helper the error says how
// to get it.
func TestKubeEndpointNeedsTheHelper(t *testing.T) {
	_, err := toolserver.New(context.Background(), &toolserver.Options{
		Endpoint: "kube://agents/hands", Kube: `{}`, Getenv: func(k string) string {
			if k == "AIRLOCK_KUBE" {
				return ""
			}
			return os.Getenv(k)
		},
	})
	if _, lerr := toolserver.FindKubeHelper(func(string) string { return "" }); lerr == nil {
		t.Skip("an airlock-kube is installed here")
	}
	if err == nil || !strings.Contains(err.Error(), "go build ./cmd/airlock-kube") {
		t.Fatalf("error %v, want the way to get the helper", err)
	}
}
