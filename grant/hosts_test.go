package grant

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParsePublicHost(t *testing.T) {
	tests := []struct {
		in   string
		want string // normal form; "" means refused
	}{
		{"api.github.com", "api.github.com"},
		{"API.GitHub.COM.", "api.github.com"},
		{"*.pypi.org", "*.pypi.org"},
		{"*.PyPI.org.", "*.pypi.org"},
		{"registry.npmjs.org:443", "registry.npmjs.org:443"},
		{"bücher.example", "xn--bcher-kva.example"},
		{"BÜCHER.example", "xn--bcher-kva.example"},
		{"xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"*.bücher.example:8443", "*.xn--bcher-kva.example:8443"},
		{"93.184.216.34", "93.184.216.34"},
		{"[2606:2800:220:1:248:1893:25c8:1946]:443", "[2606:2800:220:1:248:1893:25c8:1946]:443"},
		{"a-b.c0.example", "a-b.c0.example"},

		{"", ""},
		{"*", ""},
		{"*.com", ""},
		{"*.", ""},
		{"a.*", ""},
		{"*.*.example.com", ""},
		{"foo*.example.com", ""},
		{"*example.com", ""},
		{"a..b", ""},
		{".a.com", ""},
		{"a.com..", ""},
		{"-a.com", ""},
		{"under_score.com", ""},
		{"a b.com", ""},
		{"xn--zz--.example", ""},
		{"localhost", ""},
		{"LOCALHOST", ""},
		{"localhost.", ""},
		{"x.localhost", ""},
		{"127.0.0.1", ""},
		{"10.0.0.1", ""},
		{"169.254.169.254", ""},
		{"100.64.0.1", ""},
		{"192.0.0.192", ""},
		{"0.1.2.3", ""},
		{"[::1]", ""},
		{"::1", ""},
		{"[::ffff:127.0.0.1]", ""},
		{"[64:ff9b::a9fe:a9fe]", ""},
		{"[2002:a9fe:a9fe::]", ""},
		{"[fe80::1%lo]", ""},
		{"2130706433", ""},
		{"0x7f000001", ""},
		{"127.1", ""},
		{"0177.0.0.1", ""},
		{"a.test.0x1f", ""},
		{"api.github.com:0", ""},
		{"api.github.com:65536", ""},
		{"api.github.com:443:1", ""},
		{"api.github.com:+443", ""},
		{"api.github.com:0443", ""},
		{"api.github.com:", ""},
		{"[::1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			p, err := parsePublicHost(tt.in)
			got := ""
			if err == nil {
				got = p.String()
			}
			if got != tt.want {
				t.Errorf("parsePublicHost(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestAllowHost(t *testing.T) {
	g, err := FromFlags(t.TempDir(), Flags{
		AllowHosts: []string{"a.test", "*.b.test", "api.example.com:8443", "93.184.216.34", "*.bücher.example"},
		Private:    []string{"10.0.0.0/8", "mirror.internal", "[fd00::1]:8080"},
		PlainHTTP:  []string{"mirror.internal"},
	})
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		Rule string
		OK   bool
	}
	tests := []struct {
		host string
		port int
		want res
	}{
		{"a.test", 443, res{`network.hosts "a.test"`, true}},
		{"a.test", 80, res{`network.hosts "a.test"`, true}},
		{"A.TEST.", 443, res{`network.hosts "a.test"`, true}},
		{"a.test", 22, res{}},
		{"a.test", 0, res{}},
		{"a.test", 65536, res{}},
		{"a.test.evil.test", 443, res{}},
		{"evila.test", 443, res{}},
		{"x.a.test", 443, res{}},
		{"x.b.test", 443, res{`network.hosts "*.b.test"`, true}},
		{"x.y.B.TEST", 443, res{`network.hosts "*.b.test"`, true}},
		{"b.test", 443, res{}},
		{"evilb.test", 443, res{}},
		{"x.evilb.test", 443, res{}},
		{"xn--bcher-kva.b.test", 443, res{`network.hosts "*.b.test"`, true}},
		{"shop.bücher.example", 443, res{`network.hosts "*.xn--bcher-kva.example"`, true}},
		{"shop.xn--bcher-kva.example", 443, res{`network.hosts "*.xn--bcher-kva.example"`, true}},
		{"api.example.com", 8443, res{`network.hosts "api.example.com:8443"`, true}},
		{"api.example.com", 443, res{}},
		{"93.184.216.34", 443, res{`network.hosts "93.184.216.34"`, true}},
		{"[::ffff:93.184.216.34]", 443, res{`network.hosts "93.184.216.34"`, true}},
		{"93.184.216.35", 443, res{}},
		{"localhost", 443, res{}},
		{"LOCALHOST", 443, res{}},
		{"localhost.", 443, res{}},
		{"127.0.0.1", 443, res{}},
		{"2130706433", 443, res{}},
		{"0x7f000001", 443, res{}},
		{"127.1", 443, res{}},
		{"[::1]", 443, res{}},
		{"*.b.test", 443, res{}},
		{"", 443, res{}},
		{"10.1.2.3", 443, res{`network.private "10.0.0.0/8"`, true}},
		{"mirror.internal", 443, res{`network.private "mirror.internal"`, true}},
		{"[fd00::1]", 8080, res{`network.private "[fd00::1]:8080"`, true}},
		{"fd00::1", 443, res{}},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			rule, ok := g.AllowHost(tt.host, tt.port)
			if diff := cmp.Diff(tt.want, res{rule, ok}); diff != "" {
				t.Errorf("AllowHost(%q, %d) mismatch (-want +got):\n%s", tt.host, tt.port, diff)
			}
		})
	}

	addrs := []struct {
		addr string
		port int
		want bool
	}{
		{"10.1.2.3", 443, true}, {"::ffff:10.1.2.3", 80, true}, {"11.0.0.1", 443, false}, {"127.0.0.1", 443, false},
		{"fd00::1", 8080, true}, {"fd00::2", 8080, false},
		// An entry's port holds for its addresses however they are reached
		// (a granted name that resolves there): 10.0.0.0/8 grants 80 and
		// 443, [fd00::1]:8080 grants 8080.
		{"10.1.2.3", 22, false}, {"10.1.2.3", 6379, false}, {"fd00::1", 443, false}, {"fd00::1", 22, false},
	}
	for _, a := range addrs {
		if _, ok := g.AllowPrivate(netip.MustParseAddr(a.addr), a.port); ok != a.want {
			t.Errorf("AllowPrivate(%s, %d) = %v, want %v", a.addr, a.port, ok, a.want)
		}
	}
	if _, ok := g.AllowPrivateName("Mirror.Internal.", 443); !ok {
		t.Errorf("AllowPrivateName(mirror.internal) refused")
	}
	if _, ok := g.AllowPrivateName("a.test", 443); ok {
		t.Errorf("AllowPrivateName(a.test) allowed")
	}
	if _, ok := g.AllowPlainHTTP("mirror.internal", 80); !ok {
		t.Errorf("AllowPlainHTTP(mirror.internal) refused")
	}
	if _, ok := g.AllowPlainHTTP("a.test", 80); ok {
		t.Errorf("AllowPlainHTTP(a.test) allowed")
	}
}

// TestWildcardOverPublicSuffixRefused: a wildcard whose suffix is a public
// suffix (the Public Suffix List: co.uk, github.io, workers.dev, ...) is
// refused wherever a grant names hosts, as "*.com" is, because anyone can
// have a name under it: "*.github.io" let a sandbox reach
// attacker.github.io, a site of the attacker's choosing to send the tree
// to (red team). A wildcard below one ("*.pages.example.co.uk") and the
// suffix's own name ("github.io") are not.
func TestWildcardOverPublicSuffixRefused(t *testing.T) {
	dir := fixture(t, "w/")
	for _, h := range []string{"*.co.uk", "*.CO.UK.", "*.github.io", "*.workers.dev", "*.githubusercontent.com", "*.s3.amazonaws.com:443", "*.foo.ck", "*.googleapis.com"} {
		for _, text := range []string{
			"[network]\nhosts = [%q]\n",
			"[network]\nprivate = [%q]\n",
			"[network]\nhosts = [\"a.test\"]\nplain_http = [%q]\n",
		} {
			text := fmt.Sprintf(text, h)
			g, err := Parse([]byte(text), "grant.toml", dir)
			if err == nil {
				_, ok := g.AllowHost("attacker."+strings.TrimPrefix(strings.TrimSuffix(strings.Split(strings.ToLower(h), ":")[0], "."), "*."), 443)
				t.Errorf("%s: parsed (attacker's host allowed: %v), want a refusal", text, ok)
				continue
			}
			if !strings.Contains(err.Error(), "public suffix") {
				t.Errorf("%s: %v, want a refusal naming the public suffix", text, err)
			}
		}
	}
	for _, h := range []string{"*.example.co.uk", "github.io", "*.pypi.org", "*.a.test", "*.corp.internal", "*.amazonaws.com", "storage.googleapis.com"} {
		if _, err := Parse([]byte(fmt.Sprintf("[network]\nhosts = [%q]\n", h)), "grant.toml", dir); err != nil {
			t.Errorf("hosts = [%q]: %v, want it allowed", h, err)
		}
	}
	// No one registers a name under .arpa: a local network's wildcard stands.
	if _, err := Parse([]byte("[network]\nprivate = [\"*.home.arpa\"]\n"), "grant.toml", dir); err != nil {
		t.Errorf("private = [\"*.home.arpa\"]: %v, want it allowed", err)
	}
}
