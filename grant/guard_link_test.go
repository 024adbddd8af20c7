package grant

import (
	"strings"
	"testing"
)

// TestGuardRefusesOwnPathThroughPlantableLink: airlock's own file reached
// through a symlink inside a read-write tree (--grant ws/.airlock/grant.toml
// with ws/.airlock a link to a configuration directory; AIRLOCK_STATE_DIR
// through such a link) is the sandbox's to redirect: it replaces the link,
// and the next session loads its grant, reads its token, or writes its
// audit records where the sandbox can erase them. Guard refuses such a
// path, naming the link and the file it leads to, as a grant refuses a
// secret's file reached that way.
func TestGuardRefusesOwnPathThroughPlantableLink(t *testing.T) {
	T := fixture(t, "ws/src/", "conf/grant.toml", "conf/token", "state/",
		"ws/.airlock -> $T/conf", "ws/records -> $T/state")
	g := mustParse(t, T, "[paths]\nread_write = [\"ws\"]\n")
	for _, c := range []struct {
		name       string
		hide, keep []string
		link, dest string
	}{
		{"grant file", nil, []string{T + "/ws/.airlock/grant.toml"}, T + "/ws/.airlock", T + "/conf/grant.toml"},
		{"token file", []string{T + "/ws/.airlock/token"}, nil, T + "/ws/.airlock", T + "/conf/token"},
		{"records directory", []string{T + "/ws/records"}, nil, T + "/ws/records", T + "/state"},
	} {
		_, err := g.Guard(c.hide, c.keep)
		if err == nil {
			t.Errorf("%s through the link %s: guarded; want a refusal", c.name, c.link)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, c.link) || !strings.Contains(msg, c.dest) {
			t.Errorf("%s: err %q, want it to name the link %s and the path it leads to %s", c.name, msg, c.link, c.dest)
		}
	}
	// The same files named directly are fine: nothing in a read-write tree
	// leads to them.
	if _, err := g.Guard([]string{T + "/conf/token", T + "/state"}, []string{T + "/conf/grant.toml"}); err != nil {
		t.Errorf("own files named directly: %v", err)
	}
}
