package tool

import (
	"encoding/json"
	"net"
	"net/url"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParseHTTPFetch checks http_fetch's parser: it never panics; accepted
// arguments name exactly one host:port with a port in range, survive a JSON
// round trip, and the host the grant is checked against is the host the
// request goes to.
func FuzzParseHTTPFetch(f *testing.F) {
	for _, s := range []string{
		`{"url":"https://a.test/x"}`,
		`{"url":"http://A.TEST.:8080/p?q#f","method":"HEAD"}`,
		`{"url":"https://[::ffff:127.0.0.1]:443/"}`,
		`{"url":"https://user@a.test/"}`,
		`{"url":"https://2130706433/"}`,
		`{"url":"https://a.test:0443/"}`,
	} {
		f.Add([]byte(s))
	}
	d, _ := Lookup("http_fetch")
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := d.Parse(json.RawMessage(raw))
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty refusal")
			}
			return
		}
		acc := a.Access()
		if len(acc.Hosts) != 1 || len(acc.Paths) != 0 || acc.Exec {
			t.Fatalf("Access() = %+v, want exactly one host", acc)
		}
		host, port, err := net.SplitHostPort(acc.Hosts[0])
		if err != nil {
			t.Fatalf("Access host %q: %v", acc.Hosts[0], err)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			t.Fatalf("Access port %q", port)
		}
		ft, err := checkFetchURL(a.(HTTPFetchArgs).URL)
		if err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(ft.u.String())
		if err != nil {
			t.Fatalf("the URL sent does not parse: %v", err)
		}
		if h, err := normHost(u.Hostname()); err != nil || h != host {
			t.Fatalf("checked host %q, request goes to %q", host, u.Hostname())
		}
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		again, err := d.Parse(b)
		if err != nil {
			t.Fatalf("re-parsing %s: %v", b, err)
		}
		if diff := cmp.Diff(a, again); diff != "" {
			t.Fatalf("round trip changed the args:\n%s", diff)
		}
	})
}
