package egress

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestNormalizeHost(t *testing.T) {
	tests := []struct {
		in, want string
		bad      bool
	}{
		{in: "example.com", want: "example.com"},
		{in: "Example.COM.", want: "example.com"},
		{in: "LOCALHOST", want: "localhost"},
		{in: "localhost.", want: "localhost"},
		{in: "bücher.example", want: "xn--bcher-kva.example"},
		{in: "xn--bcher-kva.example", want: "xn--bcher-kva.example"},
		{in: "ＥＸＡＭＰＬＥ．ｃｏｍ", want: "example.com"}, // fullwidth, mapped by UTS #46
		{in: "a-b.c", want: "a-b.c"},
		{in: "", bad: true},
		{in: ".", bad: true},
		{in: "a..b", bad: true},
		{in: "a b", bad: true},
		{in: "a_b.example", bad: true},
		{in: "-a.example", bad: true},
		{in: "a/b", bad: true},
		{in: "a\x00b", bad: true},
		{in: "a%2eb", bad: true},
		{in: "a@b", bad: true},
		{in: strings.Repeat("a", 64) + ".com", bad: true},
		{in: strings.Repeat("a.", 127) + "com", bad: true},
		{in: "[::1]", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := NormalizeHost(tt.in)
			if tt.bad {
				if err == nil || !errors.Is(err, ErrBadHost) {
					t.Fatalf("NormalizeHost(%q) = %q, %v; want ErrBadHost", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("NormalizeHost(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in     string
		host   string // "" when bad
		isIP   bool
		reason string
	}{
		{in: "example.com", host: "example.com"},
		// Numeric IPv4 forms inet_aton reads are neither names nor
		// canonical addresses: refused, as the grant refuses them.
		{in: "2130706433", reason: "numeric"},
		{in: "0x7f000001", reason: "numeric"},
		{in: "0X7F000001", reason: "numeric"},
		{in: "0177.0.0.1", reason: "numeric"},
		{in: "0x7f.1", reason: "numeric"},
		{in: "127.1", reason: "numeric"},
		{in: "127.0.1", reason: "numeric"},
		{in: "0", reason: "numeric"},
		{in: "127.0.0.1.", reason: "numeric"},
		{in: "１２７.０.０.１", reason: "numeric"}, // fullwidth digits
		{in: "a.test.0x1f", reason: "numeric"},
		{in: "a.test.0x", reason: "numeric"},
		{in: "0.0.0.0", host: "0.0.0.0", isIP: true},
		{in: "169.254.169.254", host: "169.254.169.254", isIP: true},
		{in: "::1", host: "::1", isIP: true},
		{in: "::", host: "::", isIP: true},
		{in: "::ffff:127.0.0.1", host: "127.0.0.1", isIP: true},
		{in: "::ffff:7f00:1", host: "127.0.0.1", isIP: true},
		{in: "::127.0.0.1", host: "::7f00:1", isIP: true},
		{in: "fe80::1%lo", reason: "zone"},
		{in: "fe80::1%25lo", reason: "zone"},
		{in: "256.0.0.1", reason: "numeric"},
		{in: "1.2.3.4.5", reason: "numeric"},
		{in: "08", reason: "numeric"},
		{in: "4294967296", reason: "numeric"},
		{in: "a_b", reason: "disallowed"},
		{in: "", reason: "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseTarget(tt.in, 443)
			if tt.host == "" {
				if err == nil || !errors.Is(err, ErrBadHost) || !strings.Contains(err.Error(), tt.reason) {
					t.Fatalf("parseTarget(%q) = %+v, %v; want ErrBadHost mentioning %q", tt.in, got, err, tt.reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseTarget(%q): %v", tt.in, err)
			}
			if got.host != tt.host || got.ip.IsValid() != tt.isIP || got.port != 443 {
				t.Fatalf("parseTarget(%q) = %+v; want host %q, IP %v", tt.in, got, tt.host, tt.isIP)
			}
			if tt.isIP && got.ip.String() != tt.host {
				t.Fatalf("parseTarget(%q).ip = %s, want %s", tt.in, got.ip, tt.host)
			}
		})
	}
}

func TestParsePort(t *testing.T) {
	for _, s := range []string{"0", "65536", "99999", "443:1", "", "+443", "-1", "0443", "44 3", "https", "4e2"} {
		if p, err := parsePort(s); err == nil {
			t.Errorf("parsePort(%q) = %d, want an error", s, p)
		}
	}
	for s, want := range map[string]int{"1": 1, "80": 80, "443": 443, "65535": 65535} {
		if p, err := parsePort(s); err != nil || p != want {
			t.Errorf("parsePort(%q) = %d, %v; want %d", s, p, err, want)
		}
	}
}

func TestParseTargetUnmapsIPv4(t *testing.T) {
	got, err := parseTarget("::ffff:8.8.8.8", 80)
	if err != nil || got.ip != netip.MustParseAddr("8.8.8.8") {
		t.Fatalf("parseTarget = %+v, %v", got, err)
	}
}
