package toolserver_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/toolserver"
	"github.com/airlockhq/airlock/wire"
)

func TestDecodeFrame(t *testing.T) {
	for _, tc := range []struct {
		name, json, err string
	}{
		{"heartbeat", `{"type":"heartbeat","heartbeat":{"seq":1}}`, ""},
		{"hello", `{"type":"control","control":{"op":"hello","versions":[1]}}`, ""},
		{"call", `{"type":"call","id":"call_1","call":{"input":{"tool":"read_file","args":{"path":"a"},"context":{"call_id":"call_1"}},"cwd":"/w","limits":{}}}`, ""},
		{"result", `{"type":"result","id":"call_1","result":{"exit_code":0,"isolation":{"backend":"linux","features":null},"stdout":"AAAA"}}`, ""},
		{"unknown field", `{"type":"heartbeat","heartbeat":{"seq":1},"extra":1}`, "extra"},
		{"unknown nested field", `{"type":"call","id":"c","call":{"command":["x"],"cwd":"/","limits":{"walltime":1}}}`, "walltime"},
		{"unknown type", `{"type":"bogus"}`, `unknown frame type "bogus"`},
		{"two bodies", `{"type":"heartbeat","heartbeat":{"seq":1},"control":{"op":"hello"}}`, "exactly its heartbeat body"},
		{"wrong body", `{"type":"call","id":"c","result":{"exit_code":0,"isolation":{"backend":"","features":null}}}`, "exactly its call body"},
		{"call without id", `{"type":"call","call":{"command":["x"],"cwd":"/","limits":{}}}`, "needs an id"},
		{"heartbeat with id", `{"type":"heartbeat","id":"x","heartbeat":{"seq":1}}`, "carries no id"},
		{"unknown op", `{"type":"control","control":{"op":"reboot"}}`, `unknown control op "reboot"`},
		{"neither tool nor command", `{"type":"call","id":"c","call":{"cwd":"/","limits":{}}}`, "either a tool input or a command"},
		{"secrets", `{"type":"call","id":"c","call":{"input":{"tool":"http_fetch","args":{},"context":{"call_id":"c","secrets":{"k":"v"}}},"cwd":"/","limits":{}}}`, "no secrets"},
		{"bad stream", `{"type":"output","id":"c","output":{"seq":0,"stream":3}}`, "stream 3"},
		{"negative seq", `{"type":"input","id":"c","input":{"seq":-1}}`, "negative"},
		{"trailing", `{"type":"heartbeat","heartbeat":{"seq":1}} {}`, "trailing"},
		{"id too long", `{"type":"control","id":"` + strings.Repeat("x", 129) + `","control":{"op":"cancel"}}`, "needs an id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := toolserver.DecodeFrame([]byte(tc.json))
			if tc.err == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, toolserver.ErrFrame) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one naming %q", err, tc.err)
			}
		})
	}
	if _, err := toolserver.DecodeFrame(nil); !errors.Is(err, wire.ErrEmptyFrame) {
		t.Errorf("empty frame: %v", err)
	}
}

// FuzzDecodeFrame feeds a stream of wire frames to the frame decoder: it
// never panics, and whatever it accepts encodes and decodes again to the
// same encoding.
func FuzzDecodeFrame(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for {
			p, err := wire.ReadFrame(r)
			if err != nil {
				return
			}
			fr, err := toolserver.DecodeFrame(p)
			if err != nil {
				continue
			}
			b1, err := toolserver.EncodeFrame(fr)
			if err != nil {
				t.Fatalf("an accepted frame does not encode: %v", err)
			}
			fr2, err := toolserver.DecodeFrame(b1)
			if err != nil {
				t.Fatalf("an encoded frame is refused: %v\n%s", err, b1)
			}
			b2, err := toolserver.EncodeFrame(fr2)
			if err != nil || !bytes.Equal(b1, b2) {
				t.Fatalf("encoding is not stable: %v\n%s\n%s", err, b1, b2)
			}
		}
	})
}
