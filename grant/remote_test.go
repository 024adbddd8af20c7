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
		})
	}
}
