package session

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
)

// TestRelativeKubeconfigHiddenFromGrantedCwd: a $KUBECONFIG entry given
// relative (KUBECONFIG=./kubeconfig, read from the working directory as
// kubectl does) is a cluster's credentials like an absolute one: kept
// from the sandboxes, whose default grant is that very directory. It was
// dropped from the list, so a kube:// session's local sandbox (the calls
// that carry a secret) could read it.
func TestRelativeKubeconfigHiddenFromGrantedCwd(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kubeconfig"), []byte("token: cluster-admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	env := map[string]string{"KUBECONFIG": "kubeconfig" + string(filepath.ListSeparator) + "./missing"}
	files := KubeconfigFiles(func(k string) string { return env[k] })
	want := filepath.Join(dir, "kubeconfig")
	if !slices.Equal(files, []string{want}) {
		t.Errorf("KubeconfigFiles = %q, want [%q]", files, want)
	}
	g, err := grant.Default(dir)
	if err != nil {
		t.Fatal(err)
	}
	gg, err := broker.GuardGrant(g, filepath.Join(t.TempDir(), "records"), files)
	if err != nil {
		t.Fatal(err)
	}
	if d := gg.CheckPath(want, false); d.Allowed {
		t.Errorf("the sandbox may read the kubeconfig %s of KUBECONFIG=kubeconfig (%s)", want, d.Rule)
	}
}
