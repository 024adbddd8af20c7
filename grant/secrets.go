package grant

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// SecretRule says where a secret comes from and where it may go. It never
// holds the secret's value.
type SecretRule struct {
	Name   string   // the secret's name, e.g. "GITHUB_TOKEN"
	Source string   // "env:VAR" or "file:/absolute/path"
	Tools  []string // tools whose calls may carry it
	Hosts  []string // normalised host patterns it may be sent to
	Header string   // HTTP header it is injected into
	Format string   // header value, with {value} standing for the secret
}

// Defaults for a secret's header and format.
const (
	DefaultSecretHeader = "Authorization"
	DefaultSecretFormat = "Bearer {value}"
)

type secretSpec struct {
	name, from, header, format string
	tools, hosts               []string
}

// secretsFromTOML reads [secrets.NAME] tables.
func secretsFromTOML(s *spec, v any, key []string, ps *problems) {
	t, ok := v.(map[string]any)
	if !ok {
		ps.add(key, "must be a table of [secrets.NAME] tables, not %s", tomlType(v))
		return
	}
	for _, name := range sortedKeys(t) {
		sub := append(key[:len(key):len(key)], name)
		sec := secretSpec{name: name}
		str := func(dst *string) func(any, []string) { return stringField(ps, dst) }
		walkTable(t[name], sub, ps, map[string]func(any, []string){
			"from":   str(&sec.from),
			"header": str(&sec.header),
			"format": str(&sec.format),
			"tools":  func(v any, key []string) { sec.tools = stringList(v, key, ps) },
			"hosts":  func(v any, key []string) { sec.hosts = stringList(v, key, ps) },
		})
		s.secrets = append(s.secrets, sec)
	}
}

// checkSecret validates one secret against the rest of the grant.
func checkSecret(sec secretSpec, base string, enabled map[string]bool, hosts []hostPattern, ps *problems) (SecretRule, bool) {
	key := func(k string) []string { return []string{"secrets", sec.name, k} }
	n := ps.n
	if !validSecretName(sec.name) {
		ps.add([]string{"secrets", sec.name}, "a secret name is letters, digits and _ and does not start with a digit")
	}
	r := SecretRule{Name: sec.name, Header: sec.header, Format: sec.format}
	switch {
	case strings.HasPrefix(sec.from, "env:") && validSecretName(sec.from[len("env:"):]):
		r.Source = sec.from
	case strings.HasPrefix(sec.from, "file:") && tildePath(sec.from[len("file:"):]) != "":
		ps.add(key("from"), "%s", tildePath(sec.from[len("file:"):]))
	case strings.HasPrefix(sec.from, "file:") && len(sec.from) > len("file:"):
		p := sec.from[len("file:"):]
		if !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		r.Source = "file:" + filepath.Clean(p)
	case sec.from == "":
		ps.add(key("from"), "is required: \"env:VAR\" or \"file:PATH\"")
	default:
		ps.add(key("from"), "%q is not \"env:VAR\" or \"file:PATH\"", sec.from)
	}
	if len(sec.tools) == 0 {
		ps.add(key("tools"), "is required: the tools whose calls may carry the secret")
	}
	for _, t := range sec.tools {
		switch {
		case !slices.Contains(toolNames, t):
			ps.addValue(key("tools"), t, "%q is not a tool (tools: %s)", t, strings.Join(toolNames, ", "))
		case !enabled[t]:
			ps.addValue(key("tools"), t, "%q is not enabled in tools.enabled", t)
		default:
			r.Tools = append(r.Tools, t)
		}
	}
	if len(sec.hosts) == 0 {
		ps.add(key("hosts"), "is required: the hosts the secret may be sent to")
	}
	for _, h := range sec.hosts {
		p, err := parseHostPattern(h)
		if err != nil {
			ps.addValue(key("hosts"), h, "%v", err)
			continue
		}
		if !slices.ContainsFunc(hosts, func(q hostPattern) bool { return q.Covers(p) }) {
			ps.addValue(key("hosts"), h, "%q is not allowed by network.hosts", h)
			continue
		}
		r.Hosts = append(r.Hosts, p.String())
	}
	if r.Header == "" {
		r.Header = DefaultSecretHeader
	} else if !validToken(r.Header) {
		ps.add(key("header"), "%q is not an HTTP header name", r.Header)
	}
	if r.Format == "" {
		r.Format = DefaultSecretFormat
	} else if strings.Count(r.Format, "{value}") != 1 || strings.ContainsAny(r.Format, "\r\n\x00") {
		ps.add(key("format"), "%q must contain {value} exactly once and no line breaks", r.Format)
	}
	return r, ps.n == n
}

func validSecretName(s string) bool {
	if s == "" || len(s) > 128 || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, c := range []byte(s) {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// validToken reports whether s is an RFC 9110 token (a header field name).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// String describes the rule without any secret value.
func (r SecretRule) String() string {
	return fmt.Sprintf("%s from %s to %v on %v in %s", r.Name, r.Source, r.Tools, r.Hosts, r.Header)
}
