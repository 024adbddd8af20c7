package grant

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// SearchProviders are the providers web_search speaks to, by name, with
// each one's default endpoint. A grant accepts only these names; the tool
// package has one adapter for each (a test keeps the two the same).
var SearchProviders = map[string]string{
	"brave":  "https://api.search.brave.com/res/v1/web/search",
	"tavily": "https://api.tavily.com/search",
}

// Search is web_search's provider as a grant names it.
type Search struct {
	Provider string // a name of SearchProviders
	Endpoint string // its https URL: the default, or tools.web_search.endpoint
}

var (
	keySearches       = []string{"limits", "searches"}
	keySearchProvider = []string{"tools", "web_search", "provider"}
	keySearchEndpoint = []string{"tools", "web_search", "endpoint"}
)

// maxSearches bounds limits.searches.
const maxSearches = 1 << 20

// cutKey removes key k from the table v, returning its value and the rest
// of the table (v itself when it is no table or has no k).
func cutKey(v any, k string) (val any, rest any, ok bool) {
	t, isTable := v.(map[string]any)
	if !isTable {
		return nil, v, false
	}
	val, ok = t[k]
	if !ok {
		return nil, v, false
	}
	r := make(map[string]any, len(t))
	for kk, x := range t {
		if kk != k {
			r[kk] = x
		}
	}
	return val, r, true
}

// searchesFromTOML takes limits.searches, the session's cap on web
// searches, out of the [limits] table v.
func searchesFromTOML(s *spec, v any, ps *problems) any {
	val, rest, ok := cutKey(v, "searches")
	if !ok {
		return v
	}
	n, isInt := val.(int64)
	if !isInt || n < 0 || n > maxSearches {
		ps.add(keySearches, "must be an integer in 0..%d (searches a session may make; 0 allows none), not %s", maxSearches, tomlType(val))
		return rest
	}
	s.searches, s.searchesSet = int(n), true
	return rest
}

// searchFromTOML takes provider and endpoint out of [tools.web_search] v.
func searchFromTOML(s *spec, v any, ps *problems) any {
	if val, rest, ok := cutKey(v, "provider"); ok {
		v = rest
		if str, isStr := val.(string); isStr {
			s.searchProvider = str
		} else {
			ps.add(keySearchProvider, "must be a string, not %s", tomlType(val))
		}
	}
	if val, rest, ok := cutKey(v, "endpoint"); ok {
		v = rest
		if str, isStr := val.(string); isStr {
			s.searchEndpoint = str
		} else {
			ps.add(keySearchEndpoint, "must be a string, not %s", tomlType(val))
		}
	}
	return v
}

// checkSearch validates the web_search provider once the hosts are known:
// a known provider, an https endpoint, a host the grant lets the network
// reach.
func (g *Grant) checkSearch(s *spec, ps *problems) {
	g.maxSearches, g.searchesSet = s.searches, s.searchesSet
	if s.searchProvider == "" {
		if s.searchEndpoint != "" {
			ps.add(keySearchEndpoint, "needs tools.web_search.provider")
		}
		return
	}
	def, ok := SearchProviders[s.searchProvider]
	if !ok {
		names := make([]string, 0, len(SearchProviders))
		for n := range SearchProviders {
			names = append(names, n)
		}
		slices.Sort(names)
		ps.addValue(keySearchProvider, s.searchProvider, "%q is not a search provider (providers: %s)", s.searchProvider, strings.Join(names, ", "))
		return
	}
	endpoint := def
	if s.searchEndpoint != "" {
		endpoint = s.searchEndpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		ps.addValue(keySearchEndpoint, endpoint, "%q is not an https URL with a host", endpoint)
		return
	}
	port := 443
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			ps.addValue(keySearchEndpoint, endpoint, "%q has a bad port", endpoint)
			return
		}
		port = n
	}
	if _, ok := g.AllowHost(u.Hostname(), port); !ok {
		ps.addValue(keySearchProvider, s.searchProvider, "the provider's host %s is not in network.hosts (or network.private); add %q there", net.JoinHostPort(u.Hostname(), strconv.Itoa(port)), u.Hostname())
		return
	}
	g.search = &Search{Provider: s.searchProvider, Endpoint: endpoint}
	g.searchHost = net.JoinHostPort(u.Hostname(), strconv.Itoa(port))
}

// WebSearch returns web_search's provider and endpoint, or nil when the
// grant names none.
func (g *Grant) WebSearch() *Search {
	if g.search == nil {
		return nil
	}
	c := *g.search
	return &c
}

// WebSearchHost is the provider endpoint's "host:port" ("" without one): a
// web_search call reaches it, so the grant check and the secrets use it.
func (g *Grant) WebSearchHost() string { return g.searchHost }

// MaxSearches is limits.searches, the web searches a session may make, and
// whether the grant sets it (unset: no cap).
func (g *Grant) MaxSearches() (int, bool) { return g.maxSearches, g.searchesSet }

func (g *Grant) searchString() string {
	var b strings.Builder
	if g.search != nil {
		fmt.Fprintf(&b, "web_search %s %s\n", g.search.Provider, g.search.Endpoint)
	}
	if g.searchesSet {
		fmt.Fprintf(&b, "searches %d\n", g.maxSearches)
	}
	return b.String()
}
