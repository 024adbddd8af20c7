package toolserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/kube/kubereq"
	"github.com/airlockhq/airlock/internal/sandboxtest"
	"github.com/airlockhq/airlock/internal/toolserver"
)

// fakeKubeHelper is the test binary standing in for airlock-kube connect
// and release: it checks the environment it was given holds nothing but
// the allowed variables, notes "VERB SESSION PID" in $HOME/calls when
// $HOME is set, and (connect) serves the request's first path over stdio.
func fakeKubeHelper(verb, raw string) int {
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
	if home := os.Getenv("HOME"); home != "" {
		f, err := os.OpenFile(filepath.Join(home, "calls"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		fmt.Fprintf(f, "%s %s %d\n", verb, req.Session, os.Getpid())
		f.Close()
	}
	if verb == "release" {
		return 0
	}
	if _, err := kubereq.ReadKey(os.Stdin); err != nil {
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

// helperCalls are the fake helper's notes: verb, session and pid each.
func helperCalls(t *testing.T, home string) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(home, "calls"))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		out = append(out, strings.Fields(l))
	}
	return out
}

// TestKubeSessionOutlivesAConnection: the broker's kube:// session has one
// id, which every helper it spawns gets: when the helper's connection is
// lost (the helper is killed) the reconnect's helper gets the same id, and
// nothing is released; only Close ends the session, with "airlock-kube
// release" and the same id, after the last connection ended.
func TestKubeSessionOutlivesAConnection(t *testing.T) {
	w := newWorkspace(t)
	sandboxtest.Native(t)
	req, err := kubereq.FromGrant("kube://agents/hands", w.grant)
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	env := map[string]string{"AIRLOCK_KUBE": os.Args[0], "KUBECONFIG": "/kube/config-test", "HOME": home}
	b, err := toolserver.New(context.Background(), &toolserver.Options{
		Endpoint: "kube://agents/hands", Kube: req.Encode(), Getenv: func(k string) string { return env[k] },
		Heartbeat: testHeartbeat, MaxBackoff: 100 * time.Millisecond, Stderr: os.Stderr,
	})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			b.Close()
		}
	}()
	s := w.session(t, b)
	read := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := s.Call(ctx, "read_file", json.RawMessage(`{"path":"a.txt"}`))
		if err != nil || res.Class != broker.ClassOK || !strings.Contains(res.Output.Content, "alpha") {
			t.Fatalf("read_file through the helper: %v %+v", err, res)
		}
	}
	read()
	calls := helperCalls(t, home)
	if len(calls) != 1 || calls[0][0] != "connect" || len(calls[0][1]) != 12 {
		t.Fatalf("after the first connection the helper was run as %v, want one connect with a 12-digit session id", calls)
	}
	session := calls[0][1]
	pid, err := strconv.Atoi(calls[0][2])
	if err != nil {
		t.Fatal(err)
	}
	p, err := os.FindProcess(pid) // the helper this test's broker spawned
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	read() // waits for the reconnect
	calls = helperCalls(t, home)
	if len(calls) != 2 || calls[1][0] != "connect" || calls[1][1] != session || calls[1][2] == calls[0][2] {
		t.Fatalf("after the lost connection the helper was run as %v, want a second connect, another helper, the same session %s", calls, session)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	calls = helperCalls(t, home)
	if len(calls) != 3 || calls[2][0] != "release" || calls[2][1] != session {
		t.Fatalf("after Close the helper was run as %v, want a release of session %s last", calls, session)
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
