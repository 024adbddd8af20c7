package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/egresstest"
	"github.com/airlockhq/airlock/wire"
)

const searchKey = "tvly-k3y-never-shown-0042"

// searchWorld is a fake search provider on loopback (granted as a private
// host, reached only through a real egress proxy enforcing a real grant)
// answering as Brave and Tavily do, with recorded answers and failures.
type searchWorld struct {
	srv    *egresstest.Server
	env    Env
	grant  *grant.Grant
	bodies chan string // request bodies the provider received
}

// providerAnswers are the provider's recorded answers, by path.
var providerAnswers = map[string]func(w http.ResponseWriter, r *http.Request){
	"/brave": func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"type":"search","web":{"results":[
			{"title":"Go","url":"https://go.dev/","description":"The Go programming language for %s"},
			{"title":"Go docs","url":"https://pkg.go.dev/std","description":"Standard library"},
			{"title":"Elsewhere","url":"https://example.com/go","description":"not go"}]}}`, r.URL.Query().Get("q"))
	},
	"/tavily": func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"query":"q","results":[
			{"title":"Tavily one","url":"https://docs.tavily.com/a","content":"first","score":0.9},
			{"title":"Tavily two","url":"https://blog.example.org/b","content":"second\nline","score":0.5}]}`)
	},
	"/error": func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"error":"backend exploded: internal trace id 77"}`)
	},
	"/ratelimit": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":"slow down"}`)
	},
	"/unauthorized": func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":"bad key %s"}`, r.Header.Get("X-Subscription-Token")+r.Header.Get("Authorization"))
	},
	"/malformed": func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"web":{"results":[{"title":"cut off`)
	},
	// The key echoed across the cut of a snippet (1000 bytes) and of an
	// error body kept for the record (300 bytes).
	"/echo-key-cut": func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"web":{"results":[{"title":"t","url":"https://go.dev/","description":"%s%s"}]}}`, strings.Repeat("d", 990), r.Header.Get("X-Subscription-Token"))
	},
	"/echo-key-error": func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "%s%s", strings.Repeat("e", 290), r.Header.Get("X-Subscription-Token"))
	},
	"/echo-key": func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"web":{"results":[{"title":"key %s","url":"https://go.dev/","description":"%s"}]}}`, r.Header.Get("X-Subscription-Token"), r.Header.Get("X-Subscription-Token"))
	},
}

func newSearchWorld(t *testing.T, provider, path string) *searchWorld {
	t.Helper()
	ca := egresstest.NewCA(t, "search.test")
	w := &searchWorld{bodies: make(chan string, 16)}
	w.srv = egresstest.Serve(t, ca, "search.test", http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case w.bodies <- string(b):
		default:
		}
		h, ok := providerAnswers[r.URL.Path]
		if !ok {
			http.NotFound(rw, r)
			return
		}
		h(rw, r)
	}))
	header, format := "X-Subscription-Token", "{value}"
	if provider == "tavily" {
		header, format = "Authorization", "Bearer {value}"
	}
	toml := fmt.Sprintf(`
[paths]
read_only = ["."]
[network]
hosts = [%[1]q]
private = [%[1]q]
[tools.web_search]
provider = %[2]q
endpoint = "https://%[1]s%[3]s"
[secrets.SEARCH_KEY]
from = "env:SEARCH_KEY"
tools = ["web_search"]
hosts = [%[1]q]
header = %[4]q
format = %[5]q
`, w.srv.HostPort(), provider, path, header, format)
	g, err := grant.Parse([]byte(toml), "search.toml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w.grant = g
	s := g.WebSearch()
	w.env = Env{
		Root: "/", Cwd: "/",
		Secrets: map[string]string{"SEARCH_KEY": searchKey},
		Egress:  serveEgress(t, ca, g, egress.Options{Resolver: egresstest.NewResolver("search.test")}),
		Search:  &wire.Search{Provider: s.Provider, Endpoint: s.Endpoint},
	}
	return w
}

func (w *searchWorld) search(t *testing.T, args map[string]any) wire.ToolOutput {
	t.Helper()
	raw, _ := json.Marshal(args)
	def, _ := Lookup("web_search")
	a, err := def.Parse(raw)
	if err != nil {
		t.Fatalf("Parse(%s): %v", raw, err)
	}
	return def.Run(context.Background(), w.env, a)
}

// TestWebSearchProviders drives each provider adapter against the fake
// provider: results, domain filters, errors, 429, malformed answers and a
// missing key, each a sentence for the model, with the detail kept for the
// audit record, and the key nowhere in what comes back.
func TestWebSearchProviders(t *testing.T) {
	tests := []struct {
		name, provider, path string
		args                 map[string]any
		nokey, isError       bool
		want, not            []string
		detail               string // in Detail (for the audit record), never in Content
		searches             int
	}{
		{name: "brave results", provider: "brave", path: "/brave", args: map[string]any{"query": "golang"},
			want: []string{"1. Go\n   https://go.dev/\n   The Go programming language for golang", "3. Elsewhere"}, searches: 1},
		{name: "brave max_results", provider: "brave", path: "/brave", args: map[string]any{"query": "golang", "max_results": 1},
			want: []string{"1. Go\n"}, not: []string{"2. "}, searches: 1},
		{name: "brave allowed_domains", provider: "brave", path: "/brave", args: map[string]any{"query": "go", "allowed_domains": []string{"go.dev"}},
			want: []string{"1. Go\n", "2. Go docs"}, not: []string{"Elsewhere"}, searches: 1},
		{name: "brave blocked_domains", provider: "brave", path: "/brave", args: map[string]any{"query": "go", "blocked_domains": []string{"pkg.go.dev", "example.com"}},
			want: []string{"1. Go\n"}, not: []string{"Go docs", "Elsewhere"}, searches: 1},
		{name: "tavily results", provider: "tavily", path: "/tavily", args: map[string]any{"query": "x"},
			want: []string{"1. Tavily one\n   https://docs.tavily.com/a\n   first", "2. Tavily two\n   https://blog.example.org/b\n   second line"}, searches: 1},
		{name: "provider error", provider: "brave", path: "/error", args: map[string]any{"query": "x"}, isError: true,
			want: []string{"the search provider brave answered HTTP 500"}, not: []string{"exploded"}, detail: "backend exploded", searches: 1},
		{name: "rate limited", provider: "tavily", path: "/ratelimit", args: map[string]any{"query": "x"}, isError: true,
			want: []string{"limiting the rate of searches (HTTP 429); try again in 30s"}, detail: "slow down", searches: 1},
		{name: "refused key", provider: "brave", path: "/unauthorized", args: map[string]any{"query": "x"}, isError: true,
			want: []string{"refused the key (HTTP 401)"}, detail: "bad key", searches: 1},
		{name: "malformed answer", provider: "brave", path: "/malformed", args: map[string]any{"query": "x"}, isError: true,
			want: []string{"the search provider brave's answer could not be read"}, detail: "decoding the answer", searches: 1},
		{name: "provider echoes the key", provider: "brave", path: "/echo-key", args: map[string]any{"query": "x"},
			want: []string{"[secret SEARCH_KEY]"}, searches: 1},
		{name: "no key", provider: "brave", path: "/brave", args: map[string]any{"query": "x"}, nokey: true, isError: true,
			want: []string{"web_search has no key for brave"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newSearchWorld(t, tt.provider, tt.path)
			if tt.nokey {
				w.env.Secrets = nil
			}
			out := w.search(t, tt.args)
			if out.IsError != tt.isError {
				t.Fatalf("IsError = %v, want %v: %q", out.IsError, tt.isError, out.Content)
			}
			for _, s := range tt.want {
				if !strings.Contains(out.Content, s) {
					t.Errorf("content %q lacks %q", out.Content, s)
				}
			}
			for _, s := range append(tt.not, searchKey) {
				if strings.Contains(out.Content, s) || strings.Contains(out.Detail, searchKey) {
					t.Errorf("output holds %q: content %q detail %q", s, out.Content, out.Detail)
				}
			}
			if tt.detail != "" && !strings.Contains(out.Detail, tt.detail) {
				t.Errorf("detail %q lacks %q", out.Detail, tt.detail)
			}
			got := 0
			if out.Meta.Cost != nil {
				got = out.Meta.Cost.Searches
			}
			if got != tt.searches {
				t.Errorf("cost searches = %d, want %d", got, tt.searches)
			}
		})
	}
}

// TestWebSearchKeyOnlyInItsHeader: the provider receives the key in the
// grant's header and nowhere else (not the URL, not the body).
func TestWebSearchKeyOnlyInItsHeader(t *testing.T) {
	for _, provider := range []string{"brave", "tavily"} {
		t.Run(provider, func(t *testing.T) {
			w := newSearchWorld(t, provider, "/"+provider)
			w.search(t, map[string]any{"query": "q", "allowed_domains": []string{"go.dev"}})
			reqs := w.srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			r := reqs[0]
			want := map[string]string{"brave": searchKey, "tavily": "Bearer " + searchKey}[provider]
			h := map[string]string{"brave": "X-Subscription-Token", "tavily": "Authorization"}[provider]
			if r.Header.Get(h) != want {
				t.Errorf("%s = %q, want %q", h, r.Header.Get(h), want)
			}
			if strings.Contains(r.Path, searchKey) || strings.Contains(<-w.bodies, searchKey) {
				t.Errorf("the key is in the URL or the body: %s", r.Path)
			}
		})
	}
}

// TestSearchAdaptersMatchGrant: the tool has an adapter for every provider
// a grant accepts, and no other.
func TestSearchAdaptersMatchGrant(t *testing.T) {
	var a, g []string
	for n := range searchAdapters {
		a = append(a, n)
	}
	for n := range grant.SearchProviders {
		g = append(g, n)
	}
	slices.Sort(a)
	slices.Sort(g)
	if !slices.Equal(a, g) {
		t.Errorf("adapters %v, grant providers %v", a, g)
	}
}

func TestWebSearchArguments(t *testing.T) {
	def, _ := Lookup("web_search")
	for _, raw := range []string{`{}`, `{"query":"  "}`, `{"query":"x","max_results":21}`, `{"query":"x","max_results":-1}`,
		`{"query":"x","allowed_domains":["https://go.dev"]}`, `{"query":"x","blocked_domains":["a b"]}`, `{"query":"x","extra":1}`} {
		if _, err := def.Parse(json.RawMessage(raw)); err == nil {
			t.Errorf("Parse(%s) accepted", raw)
		}
	}
}

// TestWebSearchCutsHideKey checks that a key the provider echoes across a
// cut (a result's snippet, the error body kept for the audit record)
// shows none of its bytes: the text is redacted before it is cut.
func TestWebSearchCutsHideKey(t *testing.T) {
	for _, path := range []string{"/echo-key-cut", "/echo-key-error"} {
		t.Run(path, func(t *testing.T) {
			w := newSearchWorld(t, "brave", path)
			out := w.search(t, map[string]any{"query": "q"})
			if strings.Contains(out.Content, searchKey[:6]) || strings.Contains(out.Detail, searchKey[:6]) {
				t.Errorf("the key's start shows:\ncontent %q\ndetail %q", out.Content, out.Detail)
			}
		})
	}
}
