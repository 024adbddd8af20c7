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
//  1. normalises the requested host by the grant's own rules (package
//     hostrule: lowercase, no trailing dot, IDNA ASCII, an address in
//     canonical form) and refuses as malformed a name that inet_aton would
//     read as an IPv4 address ("2130706433", "0x7f000001", "127.1");
//  2. asks the [Policy] whether the name and port are granted, before any
//     lookup, so a denied name never reaches DNS;
//  3. resolves the name once, and refuses the connection unless every
//     answer is public by [Classify], the grant's rule too (or explicitly allowed by
//     [Policy.AllowPrivate]) — a mixed answer is refused;
//  4. dials exactly the address it checked, and checks it once more in the
//     default dialer's Control hook, so DNS rebinding cannot change it;
//  5. on port 443, reads the TLS ClientHello and refuses a tunnel whose SNI
//     names a different host than the one that was checked (domain fronting);
//     on port 80, carries one HTTP/1.x request per tunnel with its Host
//     header set to the checked name, and refuses anything else;
//  6. reports a [Decision] for the audit log, allowed or not.
//
// Explicitly allowing a private address or CIDR ([Policy.AllowPrivate]) or a
// private name ([PrivateNamer]) — an internal mirror, a test fixture — is the
// only way a non-public address is ever dialled, and it is a risk: it opens
// that address to whatever runs in the sandbox, and a private name trusts
// its DNS answers, loopback included. The Decision's Rule and Reason say so.
//
// Decisions worth knowing (the why, for reviewers):
//
//   - NAT64: the well-known prefix 64:ff9b::/96 is unwrapped and judged by its
//     IPv4 address, so a DNS64 network keeps working; the local-use prefix
//     64:ff9b:1::/48 is denied outright. Teredo (2001::/32) is denied.
//   - The default resolver asks for each granted name as fully qualified
//     ("a.test."), with Go's own resolver, so the host's resolv.conf search
//     list never replaces it with another name (a.test.corp.internal, tried
//     first under Kubernetes' ndots:5): the name checked is the name whose
//     addresses are vetted, dialled and audited. A single-label grant name
//     is therefore not completed by the search list either.
//   - IP literals need the policy to grant the canonical address text and
//     port, and the address to be public or explicitly allowed. The other
//     encodings inet_aton accepts are refused as malformed (SOCKS5 REP 01,
//     HTTP 400), as the grant refuses them. A zone (fe80::1%lo) is always
//     refused. IPv4-compatible (::/96) and 6to4 (2002::/16) addresses are
//     never public.
//   - SOCKS5: a non-zero RSV byte gets REP 07 like an unknown command; the
//     bound address in replies is always 0.0.0.0:0 (the broker's addresses are
//     not the sandbox's business); a first byte other than 5 or 4 is parsed
//     as HTTP, so a bad SOCKS version gets an HTTP 400, never REP 00.
//   - Plain HTTP is one request per connection, sent with Connection: close;
//     the request body must arrive within IdleTimeout.
//   - SNI (port 443 only): a ClientHello whose server_name differs from the
//     checked name, or any server_name on a tunnel to an IP literal, or a
//     malformed ClientHello, closes the tunnel before a byte goes upstream.
//     On a tunnel to a name the server_name must be present and spelled as
//     the name (ASCII, no trailing dot, letters in either case): a front
//     that routes TLS by it compares bytes and takes none, or a form that
//     only normalises to the name (a.test., a fullwidth letter, a soft
//     hyphen), to its default site, which may be another.
//     So does one with Encrypted Client Hello (or the older encrypted SNI):
//     its outer name may be the checked one while the server, a CDN's front
//     serving many names, takes the encrypted inner one. GREASE ECH, which
//     Chromium sends by default, cannot be told from it, so such a client
//     must turn ECH off to work through the proxy. A server that answers
//     with a HelloRetryRequest gets a second ClientHello, in the clear too,
//     which may name another host and which such a front may route by: the
//     proxy reads the server's first records (copying them to the client)
//     before it relays, and checks a second ClientHello as the first; a
//     second retry is refused, and so is a record that holds anything
//     after a ClientHello, where such a server would find the next one,
//     and a ClientHello cut across records, which a front that parses the
//     byte stream (HAProxy's req.ssl_sni) reads with the next record's
//     header inside it, so that it may find another server_name. A
//     client whose first bytes may start an HTTP request (a token, white
//     space, HTTP/2's cleartext preface) is handled as on port 80, below: a
//     front that takes TLS and HTTP on one port (HAProxy or sslh telling
//     them apart) routes plain HTTP by its Host header. Only a client whose
//     first bytes no request starts with is passed through, but a protocol whose server
//     speaks first is refused on port 443 after HandshakeTimeout, since the
//     proxy waits for the client's first bytes. Residual risks: the Host header inside TLS cannot be seen, so fronting that keeps
//     SNI honest and lies only in the encrypted Host header is not caught; on
//     ports other than 80 and 443 (granted by name) the tunnel is opaque.
//   - Port 80: a server that serves many names (a CDN's front) takes the
//     site from each plain HTTP request's Host header, so a relay of the
//     tunnel's bytes would let a granted name's address serve any site
//     behind the same front. A tunnel to port 80 (CONNECT or SOCKS) is
//     therefore an HTTP forward: its first request is read, sent with the
//     checked name as its Host, hop-by-hop headers dropped and
//     "Connection: close", and its response relayed; the tunnel then ends.
//     Bytes that are not an HTTP/1.x request (TLS, HTTP/2's preface, a
//     request line after blank lines, which some servers skip) are refused
//     before a byte goes upstream, and the allow decision is reported once
//     the request is read.
//   - Idle tunnels are closed between IdleTimeout and 1.5×IdleTimeout after the
//     last byte, because with splice(2) (or one long buffered copy) progress
//     is only visible when a read deadline expires.
//   - Tunnels are copied in user space, never redirected in the kernel with
//     a BPF sockmap: measured on Linux 6.18 that was slower than copying, and
//     a redirected skb is charged to no socket, so the sandbox client's window
//     stays open however slowly the upstream reads (docs/egress.md,
//     "Throughput").
//   - A connection over MaxConns waits for a place, up to HandshakeTimeout
//     (one at a time; the rest wait in the socket's queue), and is then
//     closed without a reply: a place given back late, by a connection that
//     just closed, must not cost the next one.
//   - An accept error that passes (out of descriptors, EMFILE or ENFILE; out
//     of buffers or memory; a connection aborted in the queue) pauses the
//     accept loop, 5 ms doubling to 1 s as net/http does, and never ends it;
//     the in-sandbox forwarder does the same.
//   - When the sandbox ends (Serve's context is cancelled) both ends of every
//     connection are closed, not half-closed: an upstream that stalls cannot
//     keep a relay, or the call that waits for the proxy, alive.
//   - An HTTP refusal tells the sandbox the category only ("host or port not
//     granted", "destination address is not allowed", …); the resolved
//     addresses and the rule are in the Decision, for the audit log.
//
// The in-sandbox half, which hands each connection on 127.0.0.1 to the
// proxy's socket, lives in the small package egress/forward so the sandbox
// side does not import this one; the Linux sandbox's init runs it. A
// connection accepted on the socket that starts with forward.Handoff carrying
// one descriptor is replaced by the connected TCP socket it carries (anything
// else with descriptors is refused, see handoff_linux.go); one without is a
// byte stream, spliced as before. A handed-over socket is read and written
// with MSG_DONTWAIT through a buffer, never spliced: the sandbox may hold the
// same open socket and make it blocking.
package egress
