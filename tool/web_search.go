package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/redact"
	"github.com/airlockhq/airlock/wire"
)

const webSearchDescription = `Searches the web through the search provider the grant names and returns, for each result, its title, URL and a snippet.
query is what to search for; max_results (1 to 20, default 5) caps the results; allowed_domains keeps only results from those domains (and their subdomains), blocked_domains drops results from them.
The request goes through airlock's egress proxy to the provider's host alone, with the provider's key attached by airlock (the model never sees it). A grant may cap the searches of a session. Limits: the provider's answer is capped at 2 MiB and 30 seconds (or the call's time limit, if shorter); the text returned is capped (1 MiB by default).`

// WebSearchArgs are web_search's arguments.
type WebSearchArgs struct {
	Query          string   `json:"query" desc:"what to search for"`
	MaxResults     int      `json:"max_results,omitempty" desc:"the most results to return (default 5)" min:"1" max:"20"`
	AllowedDomains []string `json:"allowed_domains,omitempty" desc:"keep only results from these domains (example.com also keeps docs.example.com)"`
	BlockedDomains []string `json:"blocked_domains,omitempty" desc:"drop results from these domains and their subdomains"`
}

// Bounds of web_search's arguments and answer.
const (
	searchMaxQuery      = 2 << 10
	searchMaxResults    = 20
	searchDefault       = 5
	searchMaxDomains    = 32
	searchMaxAnswer     = 2 << 20
	searchTimeout       = 30 * time.Second
	searchMaxSnippet    = 1000
	searchMaxDetailText = 300
)

func (a *WebSearchArgs) validate() error {
	q := strings.TrimSpace(a.Query)
	switch {
	case q == "":
		return fmt.Errorf("field %q: must not be empty", "query")
	case len(a.Query) > searchMaxQuery:
		return fmt.Errorf("field %q: longer than %d bytes", "query", searchMaxQuery)
	case a.MaxResults < 0 || a.MaxResults > searchMaxResults:
		return fmt.Errorf("field %q: must be between 1 and %d, got %d", "max_results", searchMaxResults, a.MaxResults)
	}
	for _, set := range []struct {
		field string
		list  []string
	}{{"allowed_domains", a.AllowedDomains}, {"blocked_domains", a.BlockedDomains}} {
		if len(set.list) > searchMaxDomains {
			return fmt.Errorf("field %q: at most %d domains, got %d", set.field, searchMaxDomains, len(set.list))
		}
		for _, d := range set.list {
			if !validDomain(d) {
				return fmt.Errorf("field %q: %q is not a domain name (write example.com, not a URL)", set.field, clip(d))
			}
		}
	}
	return nil
}

// validDomain reports whether d is a plain DNS name: letters, digits,
// hyphens and dots, no scheme, port or path.
func validDomain(d string) bool {
	if d == "" || len(d) > 253 || strings.HasPrefix(d, ".") || strings.HasSuffix(d, ".") {
		return false
	}
	for _, label := range strings.Split(d, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// Access names no host: the provider is the grant's, not the model's, so
// the broker adds the provider's host to the call's access.
func (a WebSearchArgs) Access() Access { return Access{} }

var webSearch = define("web_search", webSearchDescription, runWebSearch)

// searchResult is one result as the model reads it.
type searchResult struct {
	Title, URL, Snippet string
}

// searchAdapter speaks one provider's JSON interface.
type searchAdapter interface {
	// request builds the HTTP request for a (the key is added afterwards,
	// in the header the grant's secret names).
	request(ctx context.Context, endpoint string, a WebSearchArgs, n int) (*http.Request, error)
	// results decodes a 200 answer.
	results(body []byte) ([]searchResult, error)
}

// searchAdapters are the providers of wire.SearchProviders.
var searchAdapters = map[string]searchAdapter{
	"brave":  braveSearch{},
	"tavily": tavilySearch{},
}

func runWebSearch(ctx context.Context, env Env, a WebSearchArgs) wire.ToolOutput {
	if env.Search == nil {
		return Failure("web_search has no provider: the grant does not name one ([tools.web_search] provider = \"brave\" or \"tavily\")")
	}
	ad, ok := searchAdapters[env.Search.Provider]
	if !ok {
		return Failure("web_search does not know the provider %q", env.Search.Provider)
	}
	eg := env.Egress
	if eg == nil || eg.Proxy == "" {
		return Failure("web_search cannot reach the network: the grant names no hosts, so this sandbox has no egress proxy")
	}
	network, addr, ok := proxyAddr(eg.Proxy)
	if !ok {
		return Failure("web_search cannot reach the network: the egress proxy address is not usable")
	}
	t, err := checkFetchURL(env.Search.Endpoint)
	if err != nil || t.scheme != "https" {
		return Failure("web_search: the provider's endpoint %q is not an https URL", clip(env.Search.Endpoint))
	}
	n := a.MaxResults
	if n == 0 {
		n = searchDefault
	}
	timeout := searchTimeout
	if ms := env.Limits.TimeoutMS; ms > 0 {
		timeout = min(timeout, max(time.Duration(ms)*time.Millisecond-fetchTimeoutMargin, time.Second))
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	f := newFetcher(env, network, addr)
	// Ask for more than n when filtering by domain afterwards.
	ask := n
	if len(a.AllowedDomains)+len(a.BlockedDomains) > 0 {
		ask = searchMaxResults
	}
	req, err := ad.request(ctx, t.u.String(), a, ask)
	if err != nil {
		return Failure("web_search could not build the request to %s", t.host)
	}
	req.Header.Set("User-Agent", "airlock-web_search/1")
	req.Header.Set("Accept", "application/json")
	if f.addSecrets(req, t) == 0 {
		return searchFailure(env, fmt.Sprintf("web_search has no key for %s: the grant attaches no secret to %s for web_search", env.Search.Provider, t.host),
			"the grant binds no secret for web_search to the provider's host", nil)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return searchFailure(env, fmt.Sprintf("the search provider %s did not answer within %s", env.Search.Provider, timeout), err.Error(), &wire.Cost{Searches: 1})
		}
		return searchFailure(env, fmt.Sprintf("the search provider %s could not be reached", env.Search.Provider), err.Error(), &wire.Cost{Searches: 1})
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, searchMaxAnswer+1))
	cost := &wire.Cost{Searches: 1, BytesFetched: int64(len(body))}
	switch {
	case err != nil:
		return searchFailure(env, fmt.Sprintf("the search provider %s's answer was cut off", env.Search.Provider), err.Error(), cost)
	case len(body) > searchMaxAnswer:
		return searchFailure(env, fmt.Sprintf("the search provider %s's answer is larger than %d bytes", env.Search.Provider, searchMaxAnswer), "", cost)
	case resp.StatusCode == http.StatusTooManyRequests:
		wait := ""
		if ra := retryAfter(resp.Header.Get("Retry-After")); ra > 0 {
			wait = fmt.Sprintf("; try again in %s", ra)
		}
		return searchFailure(env, fmt.Sprintf("the search provider %s is limiting the rate of searches (HTTP 429)%s", env.Search.Provider, wait), snippet(body, env.Secrets), cost)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return searchFailure(env, fmt.Sprintf("the search provider %s refused the key (HTTP %d)", env.Search.Provider, resp.StatusCode), snippet(body, env.Secrets), cost)
	case resp.StatusCode != http.StatusOK:
		return searchFailure(env, fmt.Sprintf("the search provider %s answered HTTP %d", env.Search.Provider, resp.StatusCode), snippet(body, env.Secrets), cost)
	}
	results, err := ad.results(body)
	if err != nil {
		return searchFailure(env, fmt.Sprintf("the search provider %s's answer could not be read", env.Search.Provider), err.Error(), cost)
	}
	results = filterDomains(results, a.AllowedDomains, a.BlockedDomains)
	if len(results) > n {
		results = results[:n]
	}
	red := secretRedactor(env.Secrets)
	out := renderResults(a.Query, results, outputCap(env), red)
	out.Content = red.String(out.Content)
	out.Meta.Count = len(results)
	out.Meta.Cost = cost
	return out
}

// searchFailure is one sentence for the model and the detail for the audit
// record, both without any secret value.
func searchFailure(env Env, sentence, detail string, cost *wire.Cost) wire.ToolOutput {
	out := Failure("%s", sentence)
	out.Detail = redactSecrets(detail, env.Secrets)
	out.Meta.Cost = cost
	return out
}

// snippet is the start of a provider's answer body for the audit record,
// redacted before it is cut, so that a key echoed across the cut is a
// label, not a start of itself that no later redaction matches.
func snippet(b []byte, secrets map[string]string) string {
	s := redactSecrets(strings.ToValidUTF8(string(b), "?"), secrets)
	if len(s) > searchMaxDetailText {
		s = s[:searchMaxDetailText] + "..."
	}
	return "provider answered: " + s
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 && n < 86400 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t).Round(time.Second); d > 0 && d < 24*time.Hour {
			return d
		}
	}
	return 0
}

// filterDomains keeps results whose host is (or is below) one of allowed,
// when allowed is set, and drops those of blocked.
func filterDomains(rs []searchResult, allowed, blocked []string) []searchResult {
	if len(allowed)+len(blocked) == 0 {
		return rs
	}
	var out []searchResult
	for _, r := range rs {
		t, err := checkFetchURL(r.URL)
		if err != nil {
			continue
		}
		if len(allowed) > 0 && !underAny(t.host, allowed) || underAny(t.host, blocked) {
			continue
		}
		out = append(out, r)
	}
	return out
}

func underAny(host string, domains []string) bool {
	for _, d := range domains {
		d = strings.ToLower(d)
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

// renderResults prints results as numbered entries, whole entries only
// within limit bytes. A snippet is redacted (red) before it is cut.
func renderResults(query string, rs []searchResult, limit int, red *redact.Redactor) wire.ToolOutput {
	if len(rs) == 0 {
		return wire.ToolOutput{Content: fmt.Sprintf("no results for %q", clip(query))}
	}
	var b strings.Builder
	omitted := 0
	for i, r := range rs {
		entry := fmt.Sprintf("%d. %s\n   %s\n", i+1, oneLine(r.Title), oneLine(r.URL))
		if s := red.String(oneLine(r.Snippet)); s != "" {
			if len(s) > searchMaxSnippet {
				s = s[:searchMaxSnippet] + "..."
			}
			entry += "   " + s + "\n"
		}
		if b.Len()+len(entry) > limit {
			omitted = len(rs) - i
			break
		}
		b.WriteString(entry)
	}
	out := wire.ToolOutput{Content: strings.TrimSuffix(b.String(), "\n")}
	if omitted > 0 {
		out.Truncated = true
		out.Content += fmt.Sprintf("\n[%d more results omitted: the output cap]", omitted)
	}
	return out
}

// oneLine folds a provider's text onto one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ToValidUTF8(s, "?")), " ")
}

// braveSearch speaks the Brave Search API: GET with q and count, the key
// in X-Subscription-Token; results under web.results.
type braveSearch struct{}

func (braveSearch) request(ctx context.Context, endpoint string, a WebSearchArgs, n int) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return nil, err
	}
	q := req.URL.Query()
	q.Set("q", a.Query)
	q.Set("count", strconv.Itoa(n))
	req.URL.RawQuery = q.Encode()
	return req, nil
}

func (braveSearch) results(body []byte) ([]searchResult, error) {
	var v struct {
		Web *struct {
			Results []struct {
				Title       string `json:"title"`
				URL         string `json:"url"`
				Description string `json:"description"`
			} `json:"results"`
		} `json:"web"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("decoding the answer: %w", err)
	}
	if v.Web == nil {
		return nil, nil // no web results for the query
	}
	out := make([]searchResult, 0, len(v.Web.Results))
	for _, r := range v.Web.Results {
		if r.URL == "" {
			return nil, errors.New("a result without a url")
		}
		out = append(out, searchResult{Title: r.Title, URL: r.URL, Snippet: r.Description})
	}
	return out, nil
}

// tavilySearch speaks the Tavily Search API: POST of a JSON query with its
// own domain filters, the key as a bearer token; results under results.
type tavilySearch struct{}

func (tavilySearch) request(ctx context.Context, endpoint string, a WebSearchArgs, n int) (*http.Request, error) {
	body, err := json.Marshal(map[string]any{
		"query":           a.Query,
		"max_results":     n,
		"search_depth":    "basic",
		"include_domains": nonNil(a.AllowedDomains),
		"exclude_domains": nonNil(a.BlockedDomains),
	})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return req, nil
}

func (tavilySearch) results(body []byte) ([]searchResult, error) {
	var v struct {
		Results *[]struct {
			Title   string `json:"title"`
			URL     string `json:"url"`
			Content string `json:"content"`
		} `json:"results"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("decoding the answer: %w", err)
	}
	if v.Results == nil {
		return nil, errors.New("the answer has no results field")
	}
	out := make([]searchResult, 0, len(*v.Results))
	for _, r := range *v.Results {
		if r.URL == "" {
			return nil, errors.New("a result without a url")
		}
		out = append(out, searchResult{Title: r.Title, URL: r.URL, Snippet: r.Content})
	}
	return out, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
