package hostrule

import (
	"net/netip"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		addr   string
		public bool
		reason string // substring of the reason when denied
	}{
		// IPv4 public.
		{"93.184.216.34", true, ""},
		{"8.8.8.8", true, ""},
		{"1.1.1.1", true, ""},
		{"100.63.255.255", true, ""},
		{"100.128.0.0", true, ""},
		{"172.15.255.255", true, ""},
		{"172.32.0.0", true, ""},
		{"198.17.255.255", true, ""},
		{"198.20.0.0", true, ""},
		{"223.255.255.255", true, ""},
		// IPv4 denied.
		{"0.0.0.0", false, "0/8"},
		{"0.1.2.3", false, "0/8"},
		{"10.0.0.1", false, "10/8"},
		{"100.64.0.1", false, "CGNAT"},
		{"100.100.100.200", false, "CGNAT"},
		{"100.127.255.255", false, "CGNAT"},
		{"127.0.0.1", false, "loopback"},
		{"127.255.255.254", false, "loopback"},
		{"169.254.169.254", false, "link-local"},
		{"172.16.0.1", false, "172.16/12"},
		{"172.31.255.255", false, "172.16/12"},
		{"192.0.0.1", false, "192.0.0/24"},
		{"192.0.0.192", false, "192.0.0/24"},
		{"192.0.2.1", false, "documentation"},
		{"192.88.99.1", false, "6to4 relay"},
		{"192.168.1.1", false, "192.168/16"},
		{"198.18.0.1", false, "benchmarking"},
		{"198.19.255.255", false, "benchmarking"},
		{"198.51.100.7", false, "documentation"},
		{"203.0.113.9", false, "documentation"},
		{"224.0.0.1", false, "multicast"},
		{"239.255.255.250", false, "multicast"},
		{"240.0.0.1", false, "reserved"},
		{"192.31.196.1", false, "AS112"},
		{"192.52.193.1", false, "AMT"},
		{"192.175.48.1", false, "AS112"},
		{"255.255.255.255", false, "reserved"},
		// IPv6 public.
		{"2606:2800:220:1:248:1893:25c8:1946", true, ""},
		{"2001:4860:4860::8888", true, ""},
		{"2a00:1450:4001:82a::200e", true, ""},
		// IPv6 denied.
		{"::", false, "unspecified"},
		{"::1", false, "loopback"},
		{"fe80::1", false, "link-local"},
		{"febf::1", false, "link-local"},
		{"fec0::1", false, "site-local"},
		{"fc00::1", false, "unique local"},
		{"fd00:ec2::254", false, "unique local"},
		{"ff02::1", false, "multicast"},
		{"ff0e::1", false, "multicast"},
		{"2001:db8::1", false, "documentation"},
		{"2001::1", false, "Teredo"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", false, "Teredo"},
		{"2001:10::1", false, "ORCHID"},
		{"2001:20::1", false, "ORCHIDv2"},
		{"2001:2::1", false, "IETF protocol"},
		{"100::1", false, "discard"},
		{"3fff::1", false, "documentation"},
		{"2620:4f:8000::1", false, "AS112"},
		{"100:0:0:1::1", false, "dummy prefix"},
		{"5f00::1", false, "outside 2000::/3"},
		{"4000::1", false, "outside 2000::/3"},
		{"::2:1", false, ""}, // IPv4-compatible 0.2.0.1, in 0/8
		// Embedded IPv4, unwrapped.
		{"::ffff:127.0.0.1", false, "IPv4-mapped 127.0.0.1"},
		{"::ffff:7f00:1", false, "IPv4-mapped 127.0.0.1"},
		{"::ffff:169.254.169.254", false, "link-local"},
		{"::ffff:8.8.8.8", true, ""},
		{"::127.0.0.1", false, "IPv4-compatible 127.0.0.1"},
		{"::a9fe:a9fe", false, "IPv4-compatible 169.254.169.254"},
		{"::8.8.8.8", false, "IPv4-compatible 8.8.8.8"}, // deprecated form: never public
		{"64:ff9b::a9fe:a9fe", false, "NAT64 169.254.169.254"},
		{"64:ff9b::7f00:1", false, "NAT64 127.0.0.1"},
		{"64:ff9b::808:808", true, ""},
		{"64:ff9b:1::a9fe:a9fe", false, "local-use NAT64"},
		{"64:ff9b:1::808:808", false, "local-use NAT64"},
		{"2002:a9fe:a9fe::", false, "6to4 169.254.169.254"},
		{"2002:7f00:1::1", false, "6to4 127.0.0.1"},
		{"2002:c0a8:101::1", false, "6to4 192.168.1.1"},
		{"2002:808:808::1", false, "6to4 8.8.8.8"}, // deprecated relay form: never public
		// Zones.
		{"fe80::1%lo", false, "zone"},
		{"2001:4860:4860::8888%eth0", false, "zone"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			a := netip.MustParseAddr(tt.addr)
			public, reason := Classify(a)
			if public != tt.public {
				t.Fatalf("Classify(%s) = %v (%s), want %v", tt.addr, public, reason, tt.public)
			}
			if !tt.public && !strings.Contains(reason, tt.reason) {
				t.Errorf("Classify(%s) reason %q, want it to mention %q", tt.addr, reason, tt.reason)
			}
		})
	}
}

func TestClassifyInvalid(t *testing.T) {
	if public, _ := Classify(netip.Addr{}); public {
		t.Fatal("the zero Addr is public")
	}
	if IsPublic(netip.Addr{}) {
		t.Fatal("IsPublic(zero Addr)")
	}
}

// TestClassifyGoTrap pins the ranges that netip's IsGlobalUnicast && !IsPrivate lets through.
func TestClassifyGoTrap(t *testing.T) {
	for _, s := range []string{"100.64.0.1", "192.0.0.192", "198.18.0.1", "240.0.0.1", "0.1.2.3", "fec0::1",
		"64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::", "2001::1", "::a9fe:a9fe", "2001:db8::1"} {
		a := netip.MustParseAddr(s)
		if public, _ := Classify(a); public {
			t.Errorf("Classify(%s) is public", s)
		}
	}
}
