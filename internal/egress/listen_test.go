package egress

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestListenUnix(t *testing.T) {
	dir := shortDir(t)
	path := filepath.Join(dir, "s.sock")
	for _, mode := range []os.FileMode{0, 0o666} {
		p := New(&Options{SocketMode: mode})
		l, err := p.ListenUnix(path)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		want := mode
		if want == 0 {
			want = 0o600
		}
		if fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != want {
			t.Fatalf("socket mode %v, want socket %v", fi.Mode(), want)
		}
		if l.Addr().String() != path {
			t.Fatalf("Addr %q", l.Addr())
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 {
			t.Fatalf("directory holds %d entries, want only the socket", len(entries))
		}
		l.Close()
		if _, err := os.Lstat(path); !os.IsNotExist(err) {
			t.Fatalf("socket not removed on Close: %v", err)
		}
	}
	// A regular file is never replaced.
	os.WriteFile(path, []byte("x"), 0o600)
	if _, err := New(nil).ListenUnix(path); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("ListenUnix over a file: %v", err)
	}
}

func TestControlCheck(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	pub := netip.MustParseAddr("93.184.216.34")
	tests := []struct {
		name    string
		v       *vetted
		address string
		ok      bool
	}{
		{"no vetted address", nil, "93.184.216.34:443", false},
		{"same public", &vetted{addr: pub}, "93.184.216.34:443", true},
		{"different address", &vetted{addr: pub}, "93.184.216.35:443", false},
		{"loopback not allowed", &vetted{addr: lo}, "127.0.0.1:443", false},
		{"loopback allowed", &vetted{addr: lo, private: true}, "127.0.0.1:443", true},
		{"mapped form", &vetted{addr: pub}, "[::ffff:93.184.216.34]:443", true},
		{"garbage", &vetted{addr: pub}, "x", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.v != nil {
				ctx = context.WithValue(ctx, vettedKey{}, *tt.v)
			}
			err := controlCheck(ctx, "tcp4", tt.address, nil)
			if (err == nil) != tt.ok {
				t.Fatalf("controlCheck = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

// TestDefaultDialerRefusesUnvetted dials through the real default dialer
// with no vetted address in the context: the Control hook stops it.
func TestDefaultDialerRefusesUnvetted(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p := New(nil)
	_, err = p.o.Dialer.DialContext(context.Background(), "tcp", l.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "no vetted address") {
		t.Fatalf("dial without vetting: %v", err)
	}
	ctx := context.WithValue(context.Background(), vettedKey{}, vetted{addr: netip.MustParseAddr("127.0.0.1")})
	_, err = p.o.Dialer.DialContext(ctx, "tcp", l.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("dial of loopback without an allowance: %v", err)
	}
}
