package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"time"
)

// fail says how a connection attempt failed, so each protocol can map it to
// its own reply (SOCKS5 REP code, HTTP status).
type fail int

const (
	failNone        fail = iota
	failBad              // malformed request
	failDenied           // not allowed by the policy or the address rules
	failResolve          // the name did not resolve
	failRefused          // upstream refused the connection
	failNetUnreach       // no route to the network
	failHostUnreach      // host unreachable or dial timed out
	failGeneral          // anything else
)

// maxDialAttempts caps how many of a name's checked addresses are tried.
const maxDialAttempts = 4

// vetted travels in the dial context so the default dialer's Control hook can
// verify that the socket connects to the address the proxy checked.
type vetted struct {
	addr    netip.Addr
	private bool // explicitly allowed by Policy.AllowPrivate
}

type vettedKey struct{}

// controlCheck is the default dialer's ControlContext: defence in depth
// against a Dialer or resolver path that would connect somewhere unchecked.
func controlCheck(ctx context.Context, network, address string, _ syscall.RawConn) error {
	v, ok := ctx.Value(vettedKey{}).(vetted)
	if !ok {
		return fmt.Errorf("dialling %s: no vetted address in context", address)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("dialling %q: %w", address, err)
	}
	if ap.Addr().Unmap() != v.addr.Unmap() {
		return fmt.Errorf("dialling %s: vetted address was %s", ap.Addr(), v.addr)
	}
	if ap.Addr().Unmap().IsUnspecified() {
		return fmt.Errorf("dialling %s: the unspecified address reaches the host itself", ap.Addr())
	}
	if !v.private {
		if public, reason := Classify(ap.Addr()); !public {
			return fmt.Errorf("dialling %s: %s", ap.Addr(), reason)
		}
	}
	return nil
}

// open checks t against the policy and the address rules, resolves it once,
// and dials a checked address. The Decision it returns is not yet reported.
func (p *Proxy) open(ctx context.Context, proto string, t target) (net.Conn, Decision, fail) {
	d := Decision{Sandbox: p.o.Sandbox, Proto: proto, Host: t.host, Port: t.port}
	deny := func(f fail, reason string) (net.Conn, Decision, fail) {
		d.Reason = reason
		return nil, d, f
	}
	if p.o.Hold != nil {
		if err := p.o.Hold(); err != nil {
			return deny(failDenied, "egress is held: "+err.Error())
		}
	}
	rule, ok := p.o.Policy.AllowHost(t.host, t.port)
	if !ok {
		return deny(failDenied, "host and port not granted")
	}
	d.Rule = rule

	ctx, cancel := context.WithTimeout(ctx, p.o.DialTimeout)
	defer cancel()

	var addrs []netip.Addr
	if t.ip.IsValid() {
		addrs = []netip.Addr{t.ip}
	} else {
		got, err := p.o.Resolver.LookupNetIP(ctx, "ip", t.host)
		if err != nil {
			p.o.Logger.Debug("egress resolve failed", "sandbox", p.o.Sandbox, "host", t.host, "err", err)
			return deny(failResolve, "name did not resolve")
		}
		if len(got) == 0 {
			return deny(failResolve, "name resolved to no address")
		}
		addrs = dedupe(got)
	}

	// Every answer must pass before any is dialled: a mixed answer is refused.
	private := make([]bool, len(addrs))
	for i, a := range addrs {
		public, reason := Classify(a)
		if public {
			continue
		}
		prule, ok := p.allowPrivate(t, a)
		if !ok {
			d.Addr = a
			if len(addrs) > 1 {
				reason += " (one of several answers)"
			}
			return deny(failDenied, a.String()+" is not public: "+reason)
		}
		private[i] = true
		if !strings.Contains(d.Rule, "; private "+prule) {
			d.Rule += "; private " + prule
		}
	}

	var lastErr error
	for i, a := range addrs {
		if i == maxDialAttempts {
			break
		}
		vctx := context.WithValue(ctx, vettedKey{}, vetted{addr: a, private: private[i]})
		conn, err := p.o.Dialer.DialContext(vctx, "tcp", netip.AddrPortFrom(a, uint16(t.port)).String())
		if err == nil {
			d.Addr, d.Allowed, d.Reason = a, true, "ok"
			if private[i] {
				d.Reason = "ok (explicitly allowed non-public address)"
			}
			return conn, d, failNone
		}
		d.Addr, lastErr = a, err
		p.o.Logger.Debug("egress dial failed", "sandbox", p.o.Sandbox, "addr", a, "port", t.port, "err", err)
	}
	f := dialFail(lastErr)
	return deny(f, "dial failed: "+dialReason(f))
}

// allowPrivate reports whether the policy explicitly allows the non-public
// address a for target t: by the address itself, or, for a name, because the
// policy lists that name as private (see PrivateNamer). A zoned, invalid or
// unspecified address is never allowed.
func (p *Proxy) allowPrivate(t target, a netip.Addr) (string, bool) {
	// The unspecified address reaches the host's own loopback, whatever
	// a CIDR that holds it ("0.0.0.0/8") meant to allow.
	if !a.IsValid() || a.Zone() != "" || a.Unmap().IsUnspecified() {
		return "", false
	}
	if rule, ok := p.o.Policy.AllowPrivate(a, t.port); ok {
		return rule, true
	}
	pn, ok := p.o.Policy.(PrivateNamer)
	if !ok || t.ip.IsValid() {
		return "", false
	}
	return pn.AllowPrivateName(t.host, t.port)
}

func dedupe(in []netip.Addr) []netip.Addr {
	out := make([]netip.Addr, 0, len(in))
	seen := make(map[netip.Addr]bool, len(in))
	for _, a := range in {
		a = a.Unmap()
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

func dialFail(err error) fail {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return failRefused
	case errors.Is(err, syscall.ENETUNREACH):
		return failNetUnreach
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, os.ErrDeadlineExceeded),
		errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return failHostUnreach
	}
	return failGeneral
}

func dialReason(f fail) string {
	switch f {
	case failRefused:
		return "connection refused"
	case failNetUnreach:
		return "network unreachable"
	case failHostUnreach:
		return "host unreachable or timed out"
	}
	return "error"
}

// decide stamps and reports d.
func (p *Proxy) decide(d Decision) {
	d.Time = time.Now()
	d.Sandbox = p.o.Sandbox
	if d.Allowed {
		p.o.Logger.Debug("egress allowed", "sandbox", d.Sandbox, "proto", d.Proto, "host", d.Host, "port", d.Port, "addr", d.Addr, "rule", d.Rule)
	} else {
		p.o.Logger.Info("egress denied", "sandbox", d.Sandbox, "proto", d.Proto, "host", d.Host, "port", d.Port, "addr", d.Addr, "reason", d.Reason)
	}
	if p.o.OnDecision != nil {
		p.o.OnDecision(d)
	}
}
