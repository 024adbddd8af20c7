package audit_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/egresstest"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// The sandbox's init is this test binary, started in a hidden mode.
func TestMain(m *testing.M) { sandboxtest.Main(m) }

// leakValue has characters that JSON, URL and shell quoting each escape, so
// an escaped copy differs from the raw one.
const leakValue = "tok-L3ak/Check+val=ue&x<y>9"

// forms returns leakValue as it could appear in text that was not redacted:
// raw, JSON-escaped, URL-escaped (query and path), hex, and base64 (standard
// and URL alphabets) at each of the three alignments it can have inside a
// longer encoded string (for those, only the characters that depend on the
// value's bytes alone).
func forms(v string) map[string]string {
	j, _ := json.Marshal(v)
	f := map[string]string{
		"raw":       v,
		"json":      string(j[1 : len(j)-1]),
		"url query": url.QueryEscape(v),
		"url path":  url.PathEscape(v),
		"hex":       hex.EncodeToString([]byte(v)),
		"HEX":       strings.ToUpper(hex.EncodeToString([]byte(v))),
	}
	for name, enc := range map[string]*base64.Encoding{"base64": base64.StdEncoding, "base64url": base64.URLEncoding} {
		for k := range 3 {
			s := enc.EncodeToString(append(make([]byte, k), v...))
			start := 0
			if k > 0 {
				start = 4 // the first group holds k bytes before the value
			}
			f[fmt.Sprintf("%s at +%d", name, k)] = s[start : len(s)-4] // the last may hold bytes after it
		}
	}
	return f
}

// findLeaks returns where in text any form of v appears.
func findLeaks(where string, text []byte, v string) []string {
	return findForms(where, text, v, func(string) bool { return true })
}

// findForms is findLeaks for the forms named by only.
func findForms(where string, text []byte, v string, only func(form string) bool) []string {
	var out []string
	for name, f := range forms(v) {
		if !only(name) {
			continue
		}
		if i := bytes.Index(text, []byte(f)); i >= 0 {
			lo, hi := max(0, i-60), min(len(text), i+len(f)+60)
			out = append(out, fmt.Sprintf("%s: %s form at byte %d: …%q…", where, name, i, text[lo:hi]))
		}
	}
	sort.Strings(out)
	return out
}

// The scanner itself finds every form it looks for, inside longer text.
func TestFindLeaksSeesEncodedForms(t *testing.T) {
	planted := map[string]string{
		"raw":       "x " + leakValue + " y",
		"json":      mustJSON(map[string]string{"a": "Bearer " + leakValue}),
		"url query": "https://b.test/?t=" + url.QueryEscape("Bearer "+leakValue),
		"hex":       hex.EncodeToString([]byte("Bearer " + leakValue + "!")),
		"base64 +0": base64.StdEncoding.EncodeToString([]byte(leakValue + "tail")),
		"base64 +1": base64.StdEncoding.EncodeToString([]byte("B" + leakValue)),
		"base64 +2": base64.URLEncoding.EncodeToString([]byte("Be" + leakValue + "x")),
		"basic":     base64.StdEncoding.EncodeToString([]byte("user:" + leakValue)),
	}
	for name, text := range planted {
		if len(findLeaks(name, []byte(text), leakValue)) == 0 {
			t.Errorf("%s: the value planted in %q was not found", name, text)
		}
	}
	if got := findLeaks("clean", []byte("Bearer [redacted:TOKEN] "+strings.Repeat("tok-L3ak", 3)), leakValue); len(got) > 0 {
		t.Errorf("found a leak in clean text: %v", got)
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// syncBuffer is a bytes.Buffer the session's goroutines may log to at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

// TestNoSecretInRecordsLogsOrErrors drives a real session (the broker, the
// Linux sandbox, the egress proxy) whose grant gives a secret, read from a
// file, to http_fetch for one loopback host, through calls that succeed and
// fail: the secret sent and echoed back in the body, a response header and a
// redirect's URL; a host not granted; a malformed host; a granted name that
// does not resolve; the value in a call's arguments and in a URL; the shell
// trying to read the secret's file. Then it scans every byte of the records
// directory, of the session's logs (slog, debug level, the proxy's
// included), and of every Result and error the calls returned, for the
// value in any form (raw, JSON- or URL-escaped, hex, base64).
func TestNoSecretInRecordsLogsOrErrors(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // the proxies' socket directories, scanned too
	ca := egresstest.NewCA(t, "a.test", "b.test", "gone.test")
	var a, b *egresstest.Server
	echo := http.NewServeMux()
	echo.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		w.Header().Set("X-Echo", auth)
		w.Header().Set("Set-Cookie", "t="+url.QueryEscape(auth))
		fmt.Fprintf(w, "you sent %q\nbase64 %s\nhex %s\n", r.Header, base64.StdEncoding.EncodeToString([]byte(auth)), hex.EncodeToString([]byte(auth)))
	})
	echo.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, b.URL("/ok?t="+url.QueryEscape(r.Header.Get("Authorization"))), http.StatusFound)
	})
	echo.HandleFunc("/back", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, a.URL("/echo?t="+url.QueryEscape(r.Header.Get("Authorization"))), http.StatusFound)
	})
	echo.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "denied for "+r.Header.Get("Authorization"), http.StatusForbidden)
	})
	a = egresstest.Serve(t, ca, "a.test", echo)
	b = egresstest.Serve(t, ca, "b.test", nil)
	ws, caDir, secretDir := t.TempDir(), t.TempDir(), t.TempDir()
	caFile := ca.WriteFile(t, caDir)
	tokenFile := filepath.Join(secretDir, "token")
	if err := os.WriteFile(tokenFile, []byte(leakValue+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gone := "gone.test:" + fmt.Sprint(a.Port)
	g, err := grant.Parse(fmt.Appendf(nil, `
[paths]
read_write = ["."]
read_only = [%[2]q]
[network]
hosts = [%[1]q, %[4]q]
private = [%[1]q, %[4]q]
[secrets.TOKEN]
from = "file:%[3]s"
tools = ["http_fetch"]
hosts = [%[1]q, %[4]q]
`, a.HostPort(), caDir, tokenFile, gone), "leak.toml", ws)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	recDir := t.TempDir()
	s, err := broker.Open(&broker.Options{
		Grant: g, Backend: sandboxtest.Native(t), RecordsDir: recDir,
		LoadSecret: broker.LoadSecretFrom(os.Getenv),
		Logger:     logger,
		Egress: &broker.EgressOptions{
			Resolver: egresstest.NewResolver("a.test", "b.test"),
			Env:      []string{"SSL_CERT_FILE=" + caFile},
		},
	})
	if err != nil {
		t.Fatal(err)
	}

	// Every Result and error, as the caller gets them. A call whose own
	// arguments hold the value may get it back (read_file's error repeats
	// the path it was asked for): those are kept apart, and only their
	// records are scanned. A granted server that echoes the secret gets the
	// raw echo redacted from the result; what it sends encoded its own way
	// (base64, hex) airlock cannot recognise, so for /echo only the raw,
	// JSON- and URL-escaped forms count.
	var returned, echoed, own bytes.Buffer
	run := func(to *bytes.Buffer, tool string, args map[string]string) *broker.Result {
		t.Helper()
		raw, _ := json.Marshal(args)
		res, err := s.Call(context.Background(), tool, raw)
		if err != nil {
			fmt.Fprintf(to, "error: %v\n", err)
			return nil
		}
		out, _ := json.Marshal(res)
		fmt.Fprintf(to, "%s %s\n", out, res.Output.Content)
		return res
	}
	fetch := func(to *bytes.Buffer, u string) *broker.Result {
		return run(to, "http_fetch", map[string]string{"url": u})
	}

	// The secret is sent and comes back in the body, a header and a cookie.
	if res := fetch(&echoed, a.URL("/echo")); res == nil || res.Class != broker.ClassOK || res.Output.IsError || !strings.Contains(res.Output.Content, "you sent") {
		t.Fatalf("the echo fetch did not succeed: %+v", res)
	}
	if !strings.Contains(echoed.String(), "[secret TOKEN]") {
		t.Fatalf("the echoed secret was not redacted from the result (or not echoed): %s", echoed.String())
	}
	if reqs := a.Requests(); len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer "+leakValue {
		t.Fatalf("a.test did not receive the secret (the test would prove nothing): %+v", reqs)
	}
	for _, u := range []string{
		a.URL("/away"),       // a redirect to a host not granted, the secret in its URL
		a.URL("/back"),       // a redirect to the same host, the secret in its URL
		a.URL("/fail"),       // a 403 whose body holds the secret
		b.URL("/ok"),         // a host not granted
		"https://a..test/ok", // a malformed host
		"https://gone.test:" + fmt.Sprint(a.Port) + "/ok", // granted, does not resolve
	} {
		fetch(&returned, u)
	}
	fetch(&own, a.URL("/echo?t="+url.QueryEscape(leakValue))) // the value in the URL
	fetch(&own, "https://"+leakValue+"/")                     // the value as the host
	run(&own, "read_file", map[string]string{"path": leakValue})
	run(&returned, "shell", map[string]string{"command": "cat " + tokenFile + "; ls -la " + secretDir})
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	var leaks []string
	walked := 0
	err = filepath.WalkDir(recDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		leaks = append(leaks, findLeaks("path "+p, []byte(p), leakValue)...)
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			walked += len(b)
			leaks = append(leaks, findLeaks(p, b, leakValue)...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	leaks = append(leaks, findLeaks("logs", logs.Bytes(), leakValue)...)
	leaks = append(leaks, findLeaks("results and errors", returned.Bytes(), leakValue)...)
	leaks = append(leaks, findForms("the echo's result", echoed.Bytes(), leakValue, func(f string) bool {
		return f == "raw" || f == "json" || strings.HasPrefix(f, "url")
	})...)
	for _, l := range leaks {
		t.Error(l)
	}

	// The scan saw the session: a record of every call, logs, results.
	recs, problems, err := audit.ReadAll(recDir, "")
	if err != nil || len(problems) > 0 {
		t.Fatalf("reading the records: %v %v", err, problems)
	}
	var callRecs, egressRecs int
	for _, r := range recs {
		switch r.Kind {
		case audit.KindCall:
			callRecs++
		case audit.KindEgress:
			egressRecs++
		}
	}
	if callRecs != 11 || egressRecs == 0 || len(logs.Bytes()) == 0 {
		t.Errorf("scanned %d bytes of records (%d call records, want 11; %d egress), %d bytes of logs", walked, callRecs, egressRecs, len(logs.Bytes()))
	}
	t.Logf("scanned %d bytes of records (%d calls, %d egress decisions), %d of logs, %d of results (%d more holding the caller's own value, not scanned)",
		walked, callRecs, egressRecs, len(logs.Bytes()), returned.Len()+echoed.Len(), own.Len())
}
