package hostrule

import (
	"go/parser"
	"go/token"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestNormalise(t *testing.T) {
	tests := []struct {
		in   string
		want string // a name, "ip:" and the address, or "" when refused
		why  string // substring of the error when refused
	}{
		{in: "example.com", want: "example.com"},
		{in: "Example.COM.", want: "example.com"},
		{in: "LOCALHOST", want: "localhost"},
		{in: "localhost.", want: "localhost"},
		{in: "bücher.example", want: "xn--bcher-kva.example"},
		{in: "BÜCHER.example", want: "xn--bcher-kva.example"},
		{in: "xn--bcher-kva.example", want: "xn--bcher-kva.example"},
		{in: "ＥＸＡＭＰＬＥ．ｃｏｍ", want: "example.com"}, // fullwidth, mapped by UTS #46
		{in: "a-b.c0.example", want: "a-b.c0.example"},
		{in: "x.0xg", want: "x.0xg"},
		{in: "x.1a", want: "x.1a"},
		{in: "93.184.216.34", want: "ip:93.184.216.34"},
		{in: "0.0.0.0", want: "ip:0.0.0.0"},
		{in: "::1", want: "ip:::1"},
		{in: "::ffff:127.0.0.1", want: "ip:127.0.0.1"},
		{in: "::ffff:7f00:1", want: "ip:127.0.0.1"},
		{in: "::127.0.0.1", want: "ip:::7f00:1"},
		{in: "2606:2800:220:1:248:1893:25c8:1946", want: "ip:2606:2800:220:1:248:1893:25c8:1946"},

		{in: "", why: "empty"},
		{in: ".", why: "empty label"},
		{in: "a..b", why: "empty"},
		{in: ".a.com", why: "empty"},
		{in: "a.com..", why: "empty label"},
		{in: "a b", why: "not a valid host name"},
		{in: "a_b.example", why: "not a valid host name"},
		{in: "under_score.com", why: "not a valid host name"},
		{in: "-a.example", why: "not a valid host name"},
		{in: "xn--zz--.example", why: "not a valid host name"},
		{in: "a/b", why: "not a valid host name"},
		{in: "a\x00b", why: "not a valid host name"},
		{in: "a%2eb", why: "not a valid host name"},
		{in: "a@b", why: "not a valid host name"},
		{in: "a*b.com", why: "not a valid host name"},
		{in: "\xff", why: "UTF-8"}, // once mapped to U+FFFD, "xn--zn7c"
		{in: "a.\xff.test", why: "UTF-8"},
		{in: strings.Repeat("a", 64) + ".com", why: "label"},
		{in: strings.Repeat("a.", 127) + "com", why: "longer than 253"},
		{in: strings.Repeat("a", 2000), why: "longer than 253"},
		{in: "[::1]", why: "not a valid IPv6"},
		{in: "fe80::1%lo", why: "zone"},
		{in: "fe80::1%25lo", why: "zone"},
		{in: "1::2::3", why: "not a valid IPv6"},
		// Every form inet_aton reads as IPv4, and any name ending in a
		// numeric or 0x-hex label.
		{in: "2130706433", why: "numeric"},
		{in: "0x7f000001", why: "numeric"},
		{in: "0X7F000001", why: "numeric"},
		{in: "0177.0.0.1", why: "numeric"},
		{in: "0x7f.1", why: "numeric"},
		{in: "127.1", why: "numeric"},
		{in: "127.0.1", why: "numeric"},
		{in: "127.0.0.1.", why: "numeric"},
		{in: "１２７.０.０.１", why: "numeric"}, // fullwidth digits
		{in: "0", why: "numeric"},
		{in: "08", why: "numeric"},
		{in: "256.0.0.1", why: "numeric"},
		{in: "1.2.3.4.5", why: "numeric"},
		{in: "4294967296", why: "numeric"},
		{in: "a.test.0x1f", why: "numeric"},
		{in: "a.test.0x", why: "numeric"},
		{in: "a.test.42", why: "numeric"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			name, ip, err := Normalise(tt.in)
			got := name
			if ip.IsValid() {
				got = "ip:" + ip.String()
			}
			if err != nil {
				got = ""
			}
			if got != tt.want || tt.want == "" && !strings.Contains(err.Error(), tt.why) {
				t.Fatalf("Normalise(%q) = %q, %v, %v; want %q (refused mentioning %q)", tt.in, name, ip, err, tt.want, tt.why)
			}
			if name != "" && ip.IsValid() {
				t.Fatalf("Normalise(%q) set both a name and an address", tt.in)
			}
		})
	}
}

func TestPorts(t *testing.T) {
	for _, s := range []string{"0", "65536", "99999", "443:1", "", "+443", "-1", "0443", "44 3", "https", "4e2", "1_0"} {
		if p, err := ParsePort(s); err == nil {
			t.Errorf("ParsePort(%q) = %d, want an error", s, p)
		}
	}
	for s, want := range map[string]int{"1": 1, "80": 80, "443": 443, "65535": 65535} {
		if p, err := ParsePort(s); err != nil || p != want {
			t.Errorf("ParsePort(%q) = %d, %v; want %d", s, p, err, want)
		}
	}
	split := []struct {
		in, host string
		port     int
		bad      bool
	}{
		{in: "a.test", host: "a.test"},
		{in: "a.test:8443", host: "a.test", port: 8443},
		{in: "[::1]", host: "::1"},
		{in: "[::1]:80", host: "::1", port: 80},
		{in: "::1", host: "::1"},
		{in: "a.test:", bad: true},
		{in: "a.test:0", bad: true},
		{in: "[::1", bad: true},
		{in: "[::1]x", bad: true},
		{in: "[::1]:+1", bad: true},
	}
	for _, tt := range split {
		host, port, err := SplitHostPort(tt.in)
		if tt.bad != (err != nil) || !tt.bad && (host != tt.host || port != tt.port) {
			t.Errorf("SplitHostPort(%q) = %q, %d, %v; want %q, %d, bad %v", tt.in, host, port, err, tt.host, tt.port, tt.bad)
		}
	}
}

func TestParsePattern(t *testing.T) {
	tests := []struct{ in, want string }{ // want "" means refused
		{"api.github.com", "api.github.com"},
		{"API.GitHub.COM.", "api.github.com"},
		{"*.pypi.org", "*.pypi.org"},
		{"*.PyPI.org.", "*.pypi.org"},
		{"registry.npmjs.org:443", "registry.npmjs.org:443"},
		{"*.bücher.example:8443", "*.xn--bcher-kva.example:8443"},
		{"93.184.216.34", "93.184.216.34"},
		{"127.0.0.1", "127.0.0.1"}, // public or not is the caller's rule
		{"[2606:2800:220:1:248:1893:25c8:1946]:443", "[2606:2800:220:1:248:1893:25c8:1946]:443"},
		{"2606:2800:220:1:248:1893:25c8:1946", "[2606:2800:220:1:248:1893:25c8:1946]"},
		{"[::ffff:93.184.216.34]:80", "93.184.216.34:80"},
		{"localhost", "localhost"},
		{"", ""},
		{"*", ""},
		{"*.com", ""},
		{"*.", ""},
		{"a.*", ""},
		{"*.*.example.com", ""},
		{"foo*.example.com", ""},
		{"*example.com", ""},
		{"*.93.184.216.34", ""},
		{"*.[::1]", ""},
		{"10.0.0.0/8", ""},
		{"2130706433", ""},
		{"a.test.0x1f", ""},
		{"[fe80::1%lo]", ""},
		{"api.github.com:0", ""},
		{"api.github.com:65536", ""},
		{"api.github.com:443:1", ""},
		{"api.github.com:0443", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			p, err := Parse(tt.in)
			got := ""
			if err == nil {
				got = p.String()
			}
			if got != tt.want {
				t.Fatalf("Parse(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
			if err == nil {
				if q, err := Parse(got); err != nil || q != p {
					t.Fatalf("Parse(%q) of the normal form = %v, %v; want %v", got, q, err, p)
				}
			}
		})
	}
	private := []struct{ in, want string }{
		{"10.0.0.0/8", "10.0.0.0/8"},
		{"10.1.2.3/8", "10.0.0.0/8"},
		{"::ffff:10.0.0.0/104", "10.0.0.0/8"},
		{"::ffff:0:0/95", ""},
		{"fd00::/8", "fd00::/8"},
		{"fe80::%lo/64", ""},
		{"10.0.0.0/33", ""},
		{"mirror.internal", "mirror.internal"},
	}
	for _, tt := range private {
		p, err := ParsePrivate(tt.in)
		got := ""
		if err == nil {
			got = p.String()
		}
		if got != tt.want {
			t.Errorf("ParsePrivate(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, host string
		port          int
		want          bool
	}{
		{"a.test", "a.test", 443, true},
		{"a.test", "a.test", 80, true},
		{"a.test", "A.TEST.", 443, true},
		{"a.test", "a.test", 22, false},
		{"a.test", "a.test", 0, false},
		{"a.test", "a.test.evil.test", 443, false},
		{"a.test", "evila.test", 443, false},
		{"a.test", "x.a.test", 443, false},
		{"*.b.test", "x.b.test", 443, true},
		{"*.b.test", "x.y.B.TEST", 443, true},
		{"*.b.test", "b.test", 443, false},
		{"*.b.test", "evilb.test", 443, false},
		{"*.b.test", "x.evilb.test", 443, false},
		{"*.b.test", "*.b.test", 443, false},
		{"*.xn--bcher-kva.example", "shop.bücher.example", 443, true},
		{"api.example.com:8443", "api.example.com", 8443, true},
		{"api.example.com:8443", "api.example.com", 443, false},
		{"93.184.216.34", "93.184.216.34", 443, true},
		{"93.184.216.34", "::ffff:93.184.216.34", 443, true},
		{"93.184.216.34", "93.184.216.35", 443, false},
		{"93.184.216.34", "1572395042", 443, false}, // the same address, in decimal
		{"[2001:db8::1]:8080", "2001:db8::1", 8080, true},
		{"[2001:db8::1]:8080", "2001:db8::1", 443, false},
		{"localhost", "127.0.0.1", 443, false},
		{"x.test", "x.test.0x1f", 443, false},
	}
	for _, tt := range tests {
		p, err := Parse(tt.pattern)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.pattern, err)
		}
		if got := p.MatchHost(tt.host, tt.port); got != tt.want {
			t.Errorf("%q matching %q:%d = %v, want %v", tt.pattern, tt.host, tt.port, got, tt.want)
		}
	}
	cidr, _ := ParsePrivate("10.0.0.0/8")
	for ip, want := range map[string]bool{"10.1.2.3": true, "::ffff:10.1.2.3": true, "11.0.0.1": false, "0xa.1.2.3": false} {
		if got := cidr.MatchHost(ip, 443); got != want {
			t.Errorf("10.0.0.0/8 matching %s = %v, want %v", ip, got, want)
		}
	}
}

func TestCovers(t *testing.T) {
	tests := []struct {
		p, q string
		want bool
	}{
		{"*.b.test", "x.b.test", true},
		{"*.b.test", "*.x.b.test", true},
		{"*.b.test", "*.b.test", true},
		{"*.b.test", "b.test", false},
		{"x.b.test", "*.b.test", false},
		{"a.test", "a.test:443", true},
		{"a.test:443", "a.test", false},
		{"a.test", "a.test:22", false},
		{"10.0.0.0/8", "10.0.0.0/16", true},
		{"10.0.0.0/16", "10.0.0.0/8", false},
		{"10.0.0.0/8", "10.9.9.9:8080", false},
		{"10.0.0.0/8", "10.9.9.9", true},
		{"93.184.216.34", "93.184.216.34", true},
	}
	for _, tt := range tests {
		p, err := ParsePrivate(tt.p)
		if err != nil {
			t.Fatal(err)
		}
		q, err := ParsePrivate(tt.q)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Covers(q); got != tt.want {
			t.Errorf("%q covers %q = %v, want %v", tt.p, tt.q, got, tt.want)
		}
	}
}

func TestLoopbackName(t *testing.T) {
	for name, want := range map[string]bool{"localhost": true, "x.localhost": true, "localhost.test": false, "notlocalhost": false} {
		if got := IsLoopbackName(name); got != want {
			t.Errorf("IsLoopbackName(%q) = %v", name, got)
		}
	}
}

// FuzzNormalise checks that a normalised host is a fixed point, that a name
// is never an address, and that a pattern's normal form parses back.
func FuzzNormalise(f *testing.F) {
	for _, s := range []string{"example.com", "Bücher.Example.", "0x7f.1", "127.1", "::ffff:1.2.3.4", "*.a.test:8443", "a..b", "xn--bcher-kva.example", "１２７.０.０.１"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, ip, err := Normalise(s)
		if err == nil {
			if name != "" == ip.IsValid() {
				t.Fatalf("Normalise(%q) = %q, %v: want exactly one", s, name, ip)
			}
			again := name
			if ip.IsValid() {
				again = ip.String()
			}
			n2, ip2, err := Normalise(again)
			if err != nil || n2 != name || ip2 != ip {
				t.Fatalf("Normalise(%q) = %q, %v; again = %q, %v, %v", s, name, ip, n2, ip2, err)
			}
			if name != "" {
				if _, err := netip.ParseAddr(name); err == nil {
					t.Fatalf("Normalise(%q) = name %q, which is an address", s, name)
				}
			}
		}
		if p, err := Parse(s); err == nil {
			if q, err := Parse(p.String()); err != nil || q != p {
				t.Fatalf("Parse(%q) = %v; its normal form %q parses as %v, %v", s, p, p.String(), q, err)
			}
		}
	})
}

// TestImports pins what the package may import: the standard library, IDNA
// and the public suffix list, so every package that checks a host can
// afford it.
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range ast.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.Contains(strings.Split(p, "/")[0], ".") && p != "golang.org/x/net/idna" && p != "golang.org/x/net/publicsuffix" {
				t.Errorf("%s imports %s; hostrule may import only the standard library, idna and publicsuffix", f, p)
			}
		}
	}
}
