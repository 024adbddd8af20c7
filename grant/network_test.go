package grant

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNetworkAccessors(t *testing.T) {
	tests := []struct {
		name      string
		toml      string
		network   bool
		plainHTTP []string
	}{
		{"none", "", false, []string{}},
		{"hosts", `[network]
hosts = ["example.com"]`, true, []string{}},
		{"private only", `[network]
private = ["10.0.0.0/8"]`, true, []string{}},
		{"plain http", `[network]
hosts = ["Example.COM.", "*.test.example:8080"]
plain_http = ["Example.COM.", "*.test.example:8080"]`, true, []string{"example.com", "*.test.example:8080"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := Parse([]byte(tt.toml), "g.toml", t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if g.HasNetwork() != tt.network {
				t.Errorf("HasNetwork() = %v, want %v", g.HasNetwork(), tt.network)
			}
			if d := cmp.Diff(tt.plainHTTP, g.PlainHTTPHosts()); d != "" {
				t.Errorf("PlainHTTPHosts() (-want +got):\n%s", d)
			}
		})
	}
}
