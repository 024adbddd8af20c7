package grant

import "testing"

func TestSecretAllowsHost(t *testing.T) {
	r := SecretRule{Name: "T", Hosts: []string{"api.github.com", "*.xn--bcher-kva.example", "upload.example.com:8443", "93.184.216.34"}}
	tests := []struct {
		hostport string
		want     bool
	}{
		{"api.github.com", true},
		{"api.github.com:443", true},
		{"API.GitHub.com.:443", true},
		{"api.github.com:8443", false},
		{"api.github.com.evil.test", false},
		{"evilapi.github.com", false},
		{"shop.bücher.example", true},
		{"bücher.example", false},
		{"upload.example.com:8443", true},
		{"upload.example.com", false},
		{"93.184.216.34:443", true},
		{"[::ffff:93.184.216.34]:443", true},
		{"2130706433", false},
		{"api.github.com:0", false},
		{"api.github.com:443:1", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := r.AllowsHost(tt.hostport); got != tt.want {
			t.Errorf("AllowsHost(%q) = %v, want %v", tt.hostport, got, tt.want)
		}
	}
}

func TestNamesDirectory(t *testing.T) {
	dir := t.TempDir()
	if g, err := FromFlags(dir, Flags{ReadOnly: []string{dir}}); err != nil || !g.NamesDirectory() {
		t.Errorf("a read-only directory: %v, %v", g.NamesDirectory(), err)
	}
	g, err := Parse([]byte("[network]\nhosts = [\"example.com\"]\n"), "hosts.toml", dir)
	if err != nil || g.NamesDirectory() {
		t.Errorf("a grant of hosts alone names a directory (%v)", err)
	}
}
