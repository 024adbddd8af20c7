package egress

import (
	"io"
	"strings"
	"testing"
)

// TestSOCKSRefusalsAudited: every SOCKS request the proxy refuses leaves a
// Decision, as every HTTP one does, whatever the reply (REP 07, REP 08,
// 05 FF, none): a payload asking for UDP ASSOCIATE or BIND (a way out for
// UDP, or a listening socket) or speaking SOCKS4 is on the record. The
// Decision is reported before the proxy closes the connection, so it is
// there once the client reads the end.
func TestSOCKSRefusalsAudited(t *testing.T) {
	tests := []struct {
		name   string
		send   []byte
		proto  string
		reason string
	}{
		{"SOCKS4", []byte{4, 1, 0, 80, 93, 184, 216, 34, 0}, "socks4", "SOCKS4"},
		{"SOCKS4a name", append([]byte{4, 1, 0, 80, 0, 0, 0, 1, 0}, "evil.test\x00"...), "socks4", "SOCKS4"},
		{"no methods", []byte{5, 0}, "socks5", "authentication"},
		{"user/pass only", []byte{5, 1, 2}, "socks5", "authentication"},
		{"BIND", cat(greeting, []byte{5, 2, 0, 1, 93, 184, 216, 34, 0, 80}), "socks5", "BIND"},
		{"UDP ASSOCIATE", cat(greeting, []byte{5, 3, 0, 1, 8, 8, 8, 8, 0, 53}), "socks5", "UDP ASSOCIATE"},
		{"CMD 9", cat(greeting, []byte{5, 9, 0, 1, 1, 2, 3, 4, 0, 80}), "socks5", "command 9"},
		{"RSV 1", cat(greeting, []byte{5, 1, 1, 3, 6, 'a', '.', 't', 'e', 's', 't', 0, 80}), "socks5", "reserved"},
		{"ATYP 2", cat(greeting, []byte{5, 1, 0, 2, 1, 2, 3, 4, 0, 80}), "socks5", "address type 2"},
		{"request version 4", cat(greeting, []byte{4, 1, 0, 1, 1, 2, 3, 4, 0, 80}), "socks5", "malformed"},
		{"request cut short", cat(greeting, []byte{5, 1, 0, 3, 9, 'e', 'v'}), "socks5", "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			c := h.conn()
			if _, err := c.Write(tt.send); err != nil {
				t.Fatal(err)
			}
			c.CloseWrite()
			if _, err := io.ReadAll(c); err != nil {
				t.Fatal(err)
			}
			select {
			case d := <-h.decisions:
				if d.Allowed || d.Proto != tt.proto || !strings.Contains(d.Reason, tt.reason) {
					t.Errorf("Decision = %+v, want a %s refusal mentioning %q", d, tt.proto, tt.reason)
				}
			default:
				t.Errorf("refused with no Decision: nothing for the audit log")
			}
			if d := h.dial.dialed(); len(d) != 0 {
				t.Errorf("dialled %v", d)
			}
		})
	}
}
