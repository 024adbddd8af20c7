// Package egress is the allow-list proxy that runs on the broker's side of a
// sandbox: the only way a sandboxed tool reaches the network.
//
// One Proxy serves one sandbox through its own Unix socket, so a sandbox can
// never use another's listener or connection budget. It speaks the subset of
// SOCKS5 that socks5h clients use (RFC 1928: no authentication, CONNECT,
// domain names) and HTTP CONNECT plus plain-HTTP absolute-form requests.
//
// For every connection the proxy
//
//  1. normalises the requested name (lowercase, no trailing dot, IDNA ASCII)
//     and treats anything inet_aton would read as an IPv4 address
//     ("2130706433", "0x7f000001", "127.1") as an IP literal;
//  2. asks the [Policy] whether the name and port are granted, before any
//     lookup, so a denied name never reaches DNS;
//  3. resolves the name once, and refuses the connection unless every
//     answer is public by [Classify] (or explicitly allowed by
//     [Policy.AllowPrivate]) — a mixed answer is refused;
//  4. dials exactly the address it checked, and checks it once more in the
//     default dialer's Control hook, so DNS rebinding cannot change it;
//  5. on port 443, reads the TLS ClientHello and refuses a tunnel whose SNI
//     names a different host than the one that was checked (domain fronting);
//  6. reports a [Decision] for the audit log, allowed or not.
//
// Explicitly allowing a private address (an internal mirror, a test fixture)
// is the only way a non-public address is ever dialled, and it is a risk: it
// opens that address to whatever runs in the sandbox.
//
// The in-sandbox half, which bridges 127.0.0.1 to the proxy's socket, lives in
// the small package egress/forward so the sandbox side does not import this one.
package egress
