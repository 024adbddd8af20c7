package grant

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostSocketDirsRefused: the host's shared runtime and temporary
// directories hold other programs' Unix sockets (the Docker daemon's and
// D-Bus's in /run, tmux's, X11's and ssh-agent's in /tmp), and a sandbox
// that sees one connects to it whatever the mount's mode: connect(2) on a
// socket is not a write the read-only flag refuses, and a path socket is
// reached across network namespaces. So no grant, read-only or
// read-write, may be one of those directories, lie in /run (or the
// session's $XDG_RUNTIME_DIR) or hold one; a directory inside /tmp stays
// grantable, and the refusal says so.
func TestHostSocketDirsRefused(t *testing.T) {
	T := fixture(t, "ws/", "runtime/sub/")
	t.Setenv("XDG_RUNTIME_DIR", T+"/runtime")
	cases := []struct{ path, want string }{
		{"/run", "/run holds the host's sockets"},
		{"/var/run", "/run holds the host's sockets"},
		{"/run/dbus", "/run holds the host's sockets"},
		{"/tmp", "shared temporary directory"},
		{"/tmp/", "shared temporary directory"},
		{"//tmp/.", "shared temporary directory"},
		{"/var/tmp", "shared temporary directory"},
		{"/var", "holds /var/tmp"},
		{T + "/runtime", "$XDG_RUNTIME_DIR"},
		{T + "/runtime/sub", "$XDG_RUNTIME_DIR"},
		{T, "holds " + T + "/runtime"},
	}
	for _, c := range cases {
		if _, err := os.Stat(c.path); err != nil {
			t.Logf("%s: not on this host (%v)", c.path, err)
			continue
		}
		for _, key := range []string{"read_only", "read_write"} {
			_, err := Parse([]byte(fmt.Sprintf("[paths]\n%s = [%q]\n", key, c.path)), "grant.toml", T)
			if err == nil {
				t.Errorf("%s %q: granted; want a refusal: a sandbox would reach the host's sockets there", key, c.path)
				continue
			}
			if msg := err.Error(); !strings.Contains(msg, c.want) || !strings.Contains(msg, "socket") {
				t.Errorf("%s %q: err %q, want it to say %q and name the sockets", key, c.path, msg, c.want)
			}
		}
	}
	// A directory of its own inside /tmp (what t.TempDir makes) is fine,
	// as is a sibling of the runtime directory.
	mustParse(t, T, "[paths]\nread_write = [\"ws\"]\n")
	if _, err := Parse([]byte("[paths]\nread_write = [\"/tmp/"+filepath.Base(T)+"\"]\n"), "grant.toml", T); err != nil && filepath.Dir(T) == "/tmp" {
		t.Errorf("a directory inside /tmp refused: %v", err)
	}
	// A runtime directory set to /tmp itself (some containers do) is
	// ruled as /tmp: what is made inside stays grantable.
	t.Setenv("XDG_RUNTIME_DIR", "/tmp")
	mustParse(t, T, "[paths]\nread_write = [\"ws\"]\n")
}

// TestDefaultGrantRefusesHostSocketDir: airlock exec, call and mcp grant
// the working directory read-write when told nothing else, so started
// in /tmp they would give the sandbox every socket there; the default
// grant refuses it, saying to start in a directory of one's own.
func TestDefaultGrantRefusesHostSocketDir(t *testing.T) {
	if _, err := os.Stat("/tmp"); err != nil {
		t.Skip("no /tmp on this host")
	}
	_, err := Default("/tmp")
	if err == nil || !strings.Contains(err.Error(), "socket") {
		t.Fatalf("Default(/tmp): err %v, want a refusal naming the sockets", err)
	}
}
