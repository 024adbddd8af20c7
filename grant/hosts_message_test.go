package grant

import (
	"strings"
	"testing"
)

// TestHostRefusalsSayWhatToWrite: a host entry written as a URL is refused
// naming the URL and the host to write instead (it read as a host with the
// port "//example.com"), and a loopback or private host given as
// --allow-host is refused with a fix that a flag user can follow: only a
// grant file has a network.private.
func TestHostRefusalsSayWhatToWrite(t *testing.T) {
	for _, tc := range []struct {
		in   string
		says []string
		not  string
	}{
		{"https://example.com", []string{`"https://example.com" is a URL`, `"example.com"`}, "port"},
		{"http://example.com:8080/path?q=1", []string{"is a URL", `"example.com:8080"`}, "port"},
		{"https://", []string{"is a URL"}, "port"},
	} {
		_, err := parsePublicHost(tc.in)
		if err == nil {
			t.Errorf("parsePublicHost(%q) parsed, want a refusal", tc.in)
			continue
		}
		for _, s := range tc.says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("parsePublicHost(%q) = %v, want it to say %s", tc.in, err, s)
			}
		}
		if tc.not != "" && strings.Contains(err.Error(), tc.not) {
			t.Errorf("parsePublicHost(%q) = %v, which speaks of a %s", tc.in, err, tc.not)
		}
	}
	dir := t.TempDir()
	for _, h := range []string{"localhost:8799", "10.0.0.1"} {
		_, err := FromFlags(dir, Flags{AllowHosts: []string{h}})
		if err == nil || !strings.Contains(err.Error(), "network.private") || !strings.Contains(err.Error(), "--grant") {
			t.Errorf("--allow-host %s: %v, want a refusal saying network.private is in a grant file given with --grant", h, err)
		}
		_, err = Parse([]byte("[network]\nhosts = [\""+h+"\"]\n"), "grant.toml", dir)
		if err == nil || !strings.Contains(err.Error(), "network.private") || strings.Contains(err.Error(), "--grant") {
			t.Errorf("hosts = [%q] in a file: %v, want a refusal naming network.private and no flag", h, err)
		}
	}
	if _, err := parsePrivate("https://db.lan"); err == nil || !strings.Contains(err.Error(), "is a URL") {
		t.Errorf("parsePrivate(https://db.lan) = %v, want a refusal naming the URL", err)
	}
}
