package mcpserver

import (
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// BenchmarkCheckMessage measures the check every message passes before the
// SDK sees it: a small tools/call, and a write_file of 1 MiB.
func BenchmarkCheckMessage(b *testing.B) {
	for _, bc := range []struct{ name, msg string }{
		{"small", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"notes.txt"},"_meta":{"progressToken":7}}}`},
		{"1MiB", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"big.txt","content":"` + strings.Repeat("abcdefgh", 1<<17) + `"}}}`},
	} {
		data := []byte(bc.msg)
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, bad := checkMessage(data); bad != nil {
					b.Fatal(bad.Message)
				}
			}
		})
	}
}

// BenchmarkSDKDecode is the SDK's own decoding of the same messages, which
// checkMessage did after its checks before it built requests itself: the
// baseline for BenchmarkCheckMessage.
func BenchmarkSDKDecode(b *testing.B) {
	for _, bc := range []struct{ name, msg string }{
		{"small", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"notes.txt"},"_meta":{"progressToken":7}}}`},
		{"1MiB", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"big.txt","content":"` + strings.Repeat("abcdefgh", 1<<17) + `"}}}`},
	} {
		data := []byte(bc.msg)
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := jsonrpc.DecodeMessage(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestCheckMessageAgreesWithSDK: a request checkMessage builds itself is the
// one the SDK's decoding makes of the same line (id type and value, method,
// params byte for byte), so the SDK answers it as it would have.
func TestCheckMessageAgreesWithSDK(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"notes.txt"}}}`,
		`{"jsonrpc":"2.0","id":"a-7","method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":-9007199254740991,"method":"ping","params":null}`,
		`{"jsonrpc":"2.0","id":0,"method":"ping","params":[1, {"x": "\u00e9"}]}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"method":"notifications/cancelled","params":{"requestId":3},"jsonrpc":"2.0","extra":true}`,
		`{"jsonrpc":"2.0","id":"","method":""}`,
	} {
		got, bad := checkMessage([]byte(line))
		if bad != nil {
			t.Errorf("%s: refused: %s", line, bad.Message)
			continue
		}
		want, err := jsonrpc.DecodeMessage([]byte(line))
		if err != nil {
			t.Fatalf("%s: the SDK refused it: %v", line, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\nbuilt   %#v\nSDK's   %#v", line, got, want)
		}
	}
}

// TestDepth: nesting inside strings, escaped quotes included, is no nesting.
func TestDepth(t *testing.T) {
	for in, want := range map[string]int{
		`{}`:                    1,
		`"x"`:                   0,
		`{"a":[[1],[{"b":2}]]}`: 4,
		`{"a":"[[[{{{"}`:        1,
		`{"a":"\"[[[","b":[1]}`: 2,
		`[[["\\"],["\\\"]]"]]]`: 3,
	} {
		if got := depth([]byte(in)); got != want {
			t.Errorf("depth(%s) = %d, want %d", in, got, want)
		}
	}
}
