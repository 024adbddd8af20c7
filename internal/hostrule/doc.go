// Package hostrule is the one definition of airlock's host rules: how a host
// name is normalised, how a grant's host pattern matches a host and port, and
// which IP addresses are public. The grant (checking a call and loading
// network.hosts), the egress proxy (every connection) and http_fetch (every
// redirect and secret injection) all decide by it, so they cannot disagree.
//
// A host is normalised to either an IP address (IPv4-mapped IPv6 unmapped,
// no zone) or a name: IDNA (UTS #46 lookup profile) mapped to ASCII, lower
// case, one trailing dot removed, 1..63-byte labels of letters, digits and
// hyphens, at most 253 bytes. A name whose last label is all digits or "0x"
// and hex digits is refused: inet_aton, getaddrinfo and URL parsers read
// "2130706433", "0x7f.1", "127.1" and "0177.0.0.1" as IPv4 addresses, so such
// a name is neither a name nor an address in canonical form.
//
// An address is public when it is global unicast outside every row of the
// IANA special-purpose registries (see Classify). IPv4-mapped and NAT64
// (64:ff9b::/96) addresses are classified as the IPv4 address they hold; the
// other IPv6 forms that embed an IPv4 address (IPv4-compatible, 6to4,
// local-use NAT64) are never public.
//
// A wildcard ("*.suffix") needs a suffix of at least two labels that is not
// itself a public suffix (golang.org/x/net/publicsuffix: co.uk, github.io):
// anyone can have a name under one, so it would match sites of anyone's
// choosing, as "*.com" would.
//
// The package imports only the standard library, golang.org/x/net/idna and
// golang.org/x/net/publicsuffix.
package hostrule
