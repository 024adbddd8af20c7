package tool

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/airlockhq/airlock/wire"
)

// capReader reads at most n bytes of r and records whether r had more.
type capReader struct {
	r    io.Reader
	n    int64
	over bool
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.n <= 0 {
		var one [1]byte
		if k, _ := c.r.Read(one[:]); k > 0 {
			c.over = true
		}
		return 0, io.EOF
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	k, err := c.r.Read(p)
	c.n -= int64(k)
	return k, err
}

// result renders the final response: a note of the redirects followed, the
// body (or a summary of a binary one, or headers for HEAD), "[http STATUS]".
// A body still arriving when ctx ends (the fetch's time limit) makes the
// result a time-limit failure.
//
// carried says the request carried a secret: then HEAD shows no
// Content-Length of a compressed body (a server may compress unasked), whose
// length would tell how well the secret compressed with what else the body
// reflects.
func (f *fetcher) result(ctx context.Context, resp *http.Response, method string, redirects int, t fetchTarget, timeout time.Duration, carried bool) wire.ToolOutput {
	defer resp.Body.Close()
	var b strings.Builder
	if redirects > 0 {
		fmt.Fprintf(&b, "[followed %d redirect(s) to %s]\n", redirects, f.clip(t.u.String()))
	}
	out := wire.ToolOutput{Meta: wire.Meta{HTTPStatus: resp.StatusCode}}
	ct := resp.Header.Get("Content-Type")
	if method == http.MethodHead {
		enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
		for _, k := range []string{"Content-Type", "Content-Length", "Content-Encoding", "Last-Modified", "ETag"} {
			if k == "Content-Length" && carried && enc != "" && enc != "identity" {
				continue
			}
			if v := resp.Header.Get(k); v != "" {
				fmt.Fprintf(&b, "%s: %s\n", k, f.clip(wire.ValidUTF8(v)))
			}
		}
	} else {
		body, note, err := readBody(resp, f.clip)
		if err != nil && ctx.Err() != nil {
			out := Failure("the fetch ran past its time limit of %s while reading the body from %s ([http %d], %d bytes received)",
				timeout, t.hostPort(), resp.StatusCode, len(body))
			out.Meta.HTTPStatus = resp.StatusCode
			return out
		}
		out.Meta.Bytes = int64(len(body))
		out.Meta.Cost = &wire.Cost{BytesFetched: int64(len(body))}
		switch {
		case note != "" && body == nil:
			b.WriteString(note + "\n")
		case !isText(ct, body):
			if ct == "" {
				ct = http.DetectContentType(body)
			}
			fmt.Fprintf(&b, "[binary body: %s, %d bytes, not shown]\n", f.clip(wire.ValidUTF8(ct)), len(body))
		default:
			// A server may echo a secret the request carried. Its values go
			// before anything is cut, and where the body or the text was cut
			// short, the bytes that could hold the start of one go too
			// (whatever they are, so the end of a cut the model placed by
			// the URL tells nothing of a secret): a cut must not leave all
			// of a secret but its last bytes.
			red := f.red
			text := red.String(wire.ValidUTF8(string(body)))
			if note != "" {
				text = red.CutSuffix(text)
			}
			limit := outputCap(f.env)
			if len(text) > limit {
				cut := limit
				for cut > 0 && !utf8.RuneStart(text[cut]) {
					cut--
				}
				kept := red.CutSuffix(text[:cut])
				out.Truncated = true
				out.Meta.OmittedBytes = int64(len(text) - len(kept))
				text = kept + fmt.Sprintf("\n[... %d bytes cut ...]", len(text)-len(kept))
			}
			b.WriteString(text)
			if text != "" && !strings.HasSuffix(text, "\n") {
				b.WriteByte('\n')
			}
		}
		if note != "" && body != nil {
			b.WriteString(note + "\n")
		}
	}
	fmt.Fprintf(&b, "[http %d]", resp.StatusCode)
	out.Content = b.String()
	return out
}

// readBody reads the body, decoding gzip, within fetchMaxBody raw and
// decoded. note explains a cut or an encoding it did not decode; a nil body
// with a note means nothing usable was read. err is the error that ended
// the read early, if one did.
func readBody(resp *http.Response, clip func(string) string) (body []byte, note string, err error) {
	raw := &capReader{r: resp.Body, n: fetchMaxBody}
	var r io.Reader = raw
	switch enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		gz, gerr := gzip.NewReader(raw)
		if gerr != nil {
			return nil, "[the body is not valid gzip]", nil
		}
		defer gz.Close()
		r = gz
	default:
		return nil, fmt.Sprintf("[the body is %s-encoded; not decoded]", clip(enc)), nil
	}
	dec := &capReader{r: r, n: fetchMaxBody}
	body, err = io.ReadAll(dec)
	switch {
	case raw.over || dec.over:
		return body, fmt.Sprintf("[body larger than %d MiB: stopped reading]", fetchMaxBody>>20), nil
	case err != nil:
		return body, "[the body ended early: the connection failed]", err
	}
	return body, "", nil
}

// isText reports whether a body is text to show the model.
func isText(contentType string, body []byte) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch {
	case strings.HasPrefix(mt, "image/"), strings.HasPrefix(mt, "audio/"), strings.HasPrefix(mt, "video/"),
		strings.HasPrefix(mt, "font/"), mt == "application/octet-stream", mt == "application/pdf",
		mt == "application/zip", mt == "application/gzip":
		return false
	}
	if bytes.IndexByte(body, 0) >= 0 {
		return false
	}
	sample := body[:min(len(body), 8192)]
	// A sample may end inside a rune; trim up to 3 bytes before judging.
	for i := 0; i < 3 && len(sample) > 0 && !utf8.Valid(sample); i++ {
		sample = sample[:len(sample)-1]
	}
	return utf8.Valid(sample) || strings.HasPrefix(mt, "text/")
}
