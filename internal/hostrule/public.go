package hostrule

import "net/netip"

// special is one row of the special-purpose address tables.
type special struct {
	prefix netip.Prefix
	reason string
}

func mustPrefixes(rows ...[2]string) []special {
	out := make([]special, len(rows))
	for i, r := range rows {
		out[i] = special{netip.MustParsePrefix(r[0]), r[1]}
	}
	return out
}

// special4 follows the IANA IPv4 Special-Purpose Address Registry, denying
// every row, including the few the registry marks globally reachable
// (192.0.0.9, AS112 and AMT anycast): no tool has a reason to dial them.
var special4 = mustPrefixes(
	[2]string{"0.0.0.0/8", "this network (0/8)"},
	[2]string{"10.0.0.0/8", "private (10/8)"},
	[2]string{"100.64.0.0/10", "shared address space, CGNAT (100.64/10)"},
	[2]string{"127.0.0.0/8", "loopback (127/8)"},
	[2]string{"169.254.0.0/16", "link-local (169.254/16)"},
	[2]string{"172.16.0.0/12", "private (172.16/12)"},
	[2]string{"192.0.0.0/24", "IETF protocol assignments (192.0.0/24)"},
	[2]string{"192.0.2.0/24", "documentation (192.0.2/24)"},
	[2]string{"192.31.196.0/24", "AS112 (192.31.196/24)"},
	[2]string{"192.52.193.0/24", "AMT (192.52.193/24)"},
	[2]string{"192.88.99.0/24", "deprecated 6to4 relay anycast (192.88.99/24)"},
	[2]string{"192.168.0.0/16", "private (192.168/16)"},
	[2]string{"192.175.48.0/24", "AS112 direct delegation (192.175.48/24)"},
	[2]string{"198.18.0.0/15", "benchmarking (198.18/15)"},
	[2]string{"198.51.100.0/24", "documentation (198.51.100/24)"},
	[2]string{"203.0.113.0/24", "documentation (203.0.113/24)"},
	[2]string{"224.0.0.0/4", "multicast (224/4)"},
	[2]string{"240.0.0.0/4", "reserved (240/4, includes 255.255.255.255)"},
)

// special6 follows the IANA IPv6 Special-Purpose Address Registry for the
// part of 2000::/3 it covers; everything outside 2000::/3 is denied before
// this table is consulted.
var special6 = mustPrefixes(
	[2]string{"2001::/32", "Teredo (2001::/32)"},
	[2]string{"2001:10::/28", "deprecated ORCHID (2001:10::/28)"},
	[2]string{"2001:20::/28", "ORCHIDv2 (2001:20::/28)"},
	[2]string{"2001::/23", "IETF protocol assignments (2001::/23)"},
	[2]string{"2001:db8::/32", "documentation (2001:db8::/32)"},
	[2]string{"2620:4f:8000::/48", "AS112 direct delegation (2620:4f:8000::/48)"},
	[2]string{"3fff::/20", "documentation (3fff::/20)"},
)

var (
	nat64WKP    = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local  = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour   = netip.MustParsePrefix("2002::/16")
	compatible  = netip.MustParsePrefix("::/96")
	globalUni6  = netip.MustParsePrefix("2000::/3")
	discard6    = netip.MustParsePrefix("100::/64")
	dummy6      = netip.MustParsePrefix("100:0:0:1::/64")
	siteLocal6  = netip.MustParsePrefix("fec0::/10")
	ula6        = netip.MustParsePrefix("fc00::/7")
	linkLocal6  = netip.MustParsePrefix("fe80::/10")
	multicast6  = netip.MustParsePrefix("ff00::/8")
	loopback6   = netip.MustParseAddr("::1")
	unspecified = netip.IPv6Unspecified()
)

// IsPublic reports whether addr is a public unicast address (see Classify).
func IsPublic(addr netip.Addr) bool {
	public, _ := Classify(addr)
	return public
}

// Classify reports whether addr is a public unicast address, one the egress
// proxy may dial and network.hosts may list without network.private, and if
// not, why.
//
// It denies every row of the IANA special-purpose registries (loopback,
// private, link-local, CGNAT, documentation, benchmarking, multicast,
// reserved, site-local, ULA, Teredo, ORCHID, discard, …), everything outside
// 2000::/3 in IPv6, and any address with a zone. An IPv4-mapped address
// (::ffff:0:0/96) and a NAT64 address under the well-known prefix
// (64:ff9b::/96, so that a DNS64 network keeps working) are classified as the
// IPv4 address they hold. The other forms that embed an IPv4 address are
// never public: IPv4-compatible (::/96, deprecated), 6to4 (2002::/16,
// deprecated) and local-use NAT64 (64:ff9b:1::/48, where the IPv4 address
// sits depends on the operator's prefix length). The reason names the
// embedded address, and its own class when that is not public either.
func Classify(addr netip.Addr) (public bool, reason string) {
	if !addr.IsValid() {
		return false, "invalid address"
	}
	if addr.Zone() != "" {
		return false, "address with a zone"
	}
	if addr.Is4() {
		return classify4(addr)
	}
	switch {
	case addr == unspecified:
		return false, "unspecified (::)"
	case addr == loopback6:
		return false, "loopback (::1)"
	case addr.Is4In6():
		v4 := addr.Unmap()
		if public, reason := classify4(v4); !public {
			return false, "IPv4-mapped " + v4.String() + ": " + reason
		}
		return true, "public (IPv4-mapped " + v4.String() + ")"
	case compatible.Contains(addr):
		return embeds("IPv4-compatible", embedded(addr, 12))
	case nat64WKP.Contains(addr):
		// Judged by its IPv4 address, so a DNS64 network keeps working.
		v4 := embedded(addr, 12)
		if public, reason := classify4(v4); !public {
			return false, "NAT64 " + v4.String() + ": " + reason
		}
		return true, "public (NAT64 " + v4.String() + ")"
	case nat64Local.Contains(addr):
		return false, "local-use NAT64 (64:ff9b:1::/48)"
	case sixToFour.Contains(addr):
		return embeds("6to4", embedded(addr, 2))
	case discard6.Contains(addr):
		return false, "discard-only (100::/64)"
	case dummy6.Contains(addr):
		return false, "dummy prefix (100:0:0:1::/64)"
	case siteLocal6.Contains(addr):
		return false, "site-local (fec0::/10)"
	case ula6.Contains(addr):
		return false, "unique local (fc00::/7)"
	case linkLocal6.Contains(addr):
		return false, "link-local (fe80::/10)"
	case multicast6.Contains(addr):
		return false, "multicast (ff00::/8)"
	case !globalUni6.Contains(addr):
		return false, "not global unicast (outside 2000::/3)"
	}
	for _, s := range special6 {
		if s.prefix.Contains(addr) {
			return false, s.reason
		}
	}
	return true, "public"
}

func classify4(addr netip.Addr) (bool, string) {
	for _, s := range special4 {
		if s.prefix.Contains(addr) {
			return false, s.reason
		}
	}
	return true, "public"
}

// embedded returns the IPv4 address held in bytes off..off+4 of an IPv6 address.
func embedded(addr netip.Addr, off int) netip.Addr {
	b := addr.As16()
	return netip.AddrFrom4([4]byte(b[off : off+4]))
}

func embeds(form string, v4 netip.Addr) (bool, string) {
	if public, reason := classify4(v4); !public {
		return false, form + " " + v4.String() + ": " + reason
	}
	return false, form + " " + v4.String() + ": an IPv4 address embedded in IPv6 is not public; use " + v4.String()
}

// Block is a CIDR less some of its parts: a NetworkPolicy's ipBlock.
type Block struct {
	CIDR   netip.Prefix
	Except []netip.Prefix
}

// PublicBlocks are the addresses Classify takes for public, as blocks a
// NetworkPolicy can name, so that the policy admits no address the egress
// proxy would refuse: 0.0.0.0/0 less every IPv4 special-purpose row,
// 2000::/3 less every IPv6 row and 6to4, and the NAT64 well-known prefix
// less the NAT64 form of every IPv4 row. (An IPv4-mapped address is IPv4
// on the wire, under the first block.)
func PublicBlocks() []Block {
	v4 := Block{CIDR: netip.MustParsePrefix("0.0.0.0/0")}
	nat := Block{CIDR: nat64WKP}
	for _, r := range special4 {
		v4.Except = append(v4.Except, r.prefix)
		b := nat64WKP.Addr().As16()
		a := r.prefix.Addr().As4()
		copy(b[12:], a[:])
		nat.Except = append(nat.Except, netip.PrefixFrom(netip.AddrFrom16(b), 96+r.prefix.Bits()))
	}
	v6 := Block{CIDR: globalUni6, Except: []netip.Prefix{sixToFour}}
	for _, r := range special6 {
		v6.Except = append(v6.Except, r.prefix)
	}
	out := []Block{v4, v6, nat}
	for i := range out {
		out[i].Except = outermost(out[i].Except)
	}
	return out
}

// outermost drops the prefixes another of ps contains, keeping the order.
func outermost(ps []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for i, p := range ps {
		inner := false
		for j, q := range ps {
			if i != j && q.Bits() < p.Bits() && q.Contains(p.Addr()) {
				inner = true
			}
		}
		if !inner {
			out = append(out, p)
		}
	}
	return out
}
