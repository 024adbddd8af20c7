package grant_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/grant"
)

func TestRemoteTable(t *testing.T) {
	for _, tc := range []struct {
		name, toml string
		want       grant.Remote
		err        string
	}{
		{"none", ``, grant.Remote{}, ""},
		{"stdio", `[remote]
endpoint = "stdio:airlock tool-server --root /w"`, grant.Remote{Endpoint: "stdio:airlock tool-server --root /w"}, ""},
		{"wss", `[remote]
endpoint = "wss://hands:8443"
token = "file:token"
ca = "ca.pem"`, grant.Remote{Endpoint: "wss://hands:8443", Token: "file:/base/token", CA: "/base/ca.pem"}, ""},
		{"env token", `[remote]
endpoint = "ws://127.0.0.1:9"
token = "env:HANDS_TOKEN"`, grant.Remote{Endpoint: "ws://127.0.0.1:9", Token: "env:HANDS_TOKEN"}, ""},
		{"ws without token", `[remote]
endpoint = "wss://hands:8443"`, grant.Remote{}, "remote.token: is required"},
		{"token inline", `[remote]
endpoint = "wss://hands:8443"
token = "s3cr3t"`, grant.Remote{}, "the token itself never goes in a grant"},
		{"bad scheme", `[remote]
endpoint = "http://hands"`, grant.Remote{}, `"http://hands" is not stdio:CMD`},
		{"unknown key", `[remote]
endpoint = "stdio:x"
retries = 3`, grant.Remote{}, "retries"},
		{"not a table", `remote = "stdio:x"`, grant.Remote{}, "remote"},
		{"kube", `[remote]
endpoint = "kube://agents/hands"
runtime_class = "gvisor"`, grant.Remote{Endpoint: "kube://agents/hands", RuntimeClass: "gvisor"}, ""},
		{"kube without template", `[remote]
endpoint = "kube://agents"`, grant.Remote{}, `"kube://agents" is not kube://NAMESPACE/TEMPLATE`},
		{"kube bad namespace", `[remote]
endpoint = "kube://Agents_1/hands"`, grant.Remote{}, "each a DNS label"},
		{"kube with token", `[remote]
endpoint = "kube://agents/hands"
token = "env:T"`, grant.Remote{}, "a kube endpoint takes no token"},
		{"runtime class off kube", `[remote]
endpoint = "wss://hands:8443"
token = "env:T"
runtime_class = "gvisor"`, grant.Remote{}, "remote.runtime_class"},
		{"kube workspace", `[remote]
endpoint = "kube://agents/hands"
workspace_size = "10Gi"
workspace_class = "fast-ssd.example.com"`, grant.Remote{Endpoint: "kube://agents/hands", WorkspaceSize: "10Gi", WorkspaceClass: "fast-ssd.example.com"}, ""},
		{"kube workspace decimal", `[remote]
endpoint = "kube://agents/hands"
workspace_size = "1.5G"`, grant.Remote{Endpoint: "kube://agents/hands", WorkspaceSize: "1.5G"}, ""},
		{"kube workspace bytes", `[remote]
endpoint = "kube://agents/hands"
workspace_size = "1073741824"`, grant.Remote{Endpoint: "kube://agents/hands", WorkspaceSize: "1073741824"}, ""},
		{"workspace size not a quantity", `[remote]
endpoint = "kube://agents/hands"
workspace_size = "10GB"`, grant.Remote{}, `remote.workspace_size: "10GB" is not a Kubernetes quantity`},
		{"workspace size negative", `[remote]
endpoint = "kube://agents/hands"
workspace_size = "-1Gi"`, grant.Remote{}, `remote.workspace_size: "-1Gi" is not a Kubernetes quantity`},
		{"workspace size zero", `[remote]
endpoint = "kube://agents/hands"
workspace_size = "0.0Gi"`, grant.Remote{}, "remote.workspace_size: \"0.0Gi\": the workspace needs a size above zero"},
		{"workspace size not a string", `[remote]
endpoint = "kube://agents/hands"
workspace_size = 10`, grant.Remote{}, "remote.workspace_size: must be a string"},
		{"workspace size off kube", `[remote]
endpoint = "stdio:x"
workspace_size = "10Gi"`, grant.Remote{}, `remote.workspace_size: "10Gi": only for a kube:// endpoint`},
		{"kube userns pods", `[remote]
endpoint = "kube://agents/hands"
pod_security = "userns"`, grant.Remote{Endpoint: "kube://agents/hands", PodSecurity: "userns"}, ""},
		{"kube restricted pods", `[remote]
endpoint = "kube://agents/hands"
pod_security = "restricted"`, grant.Remote{Endpoint: "kube://agents/hands", PodSecurity: "restricted"}, ""},
		{"pod security unknown", `[remote]
endpoint = "kube://agents/hands"
pod_security = "baseline"`, grant.Remote{}, `remote.pod_security: "baseline" is not "restricted" (the default`},
		{"pod security not a string", `[remote]
endpoint = "kube://agents/hands"
pod_security = true`, grant.Remote{}, "remote.pod_security: must be a string"},
		{"pod security off kube", `[remote]
endpoint = "wss://hands:8443"
token = "env:T"
pod_security = "userns"`, grant.Remote{}, `remote.pod_security: "userns": only for a kube:// endpoint`},
		{"workspace class without size", `[remote]
endpoint = "kube://agents/hands"
workspace_class = "standard"`, grant.Remote{}, "remote.workspace_class: \"standard\" needs remote.workspace_size"},
		{"workspace class bad name", `[remote]
endpoint = "kube://agents/hands"
workspace_size = "10Gi"
workspace_class = "Fast_SSD"`, grant.Remote{}, `remote.workspace_class: "Fast_SSD" is not a StorageClass name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			src := strings.ReplaceAll(tc.toml, "/base/", base+"/")
			g, err := grant.Parse([]byte(src), "g.toml", base)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			want.Token = strings.ReplaceAll(want.Token, "/base/", base+"/")
			want.CA = strings.ReplaceAll(want.CA, "/base/", base+"/")
			if diff := cmp.Diff(want, g.Remote()); diff != "" {
				t.Fatalf("Remote() (-want +got):\n%s", diff)
			}
			// Widening the grant (flags on top of a grant file, or
			// airlock.Options.AllowUnenforcedLimits) keeps where its
			// sandboxes run, its relative paths still from the file's
			// directory: dropping [remote] would run the calls on this
			// host, where the token file is no longer hidden.
			w, err := g.With(t.TempDir(), grant.Flags{AllowUnenforcedLimits: true})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, w.Remote()); diff != "" {
				t.Fatalf("With().Remote() (-want +got):\n%s", diff)
			}
		})
	}
}
