package mcpserver

import (
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
// every message pays anyway: the baseline for BenchmarkCheckMessage.
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
