package cli

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/grant"
)

// foreignOwners says, when airlock runs as root, which read-write trees of
// g belong to another user. The native sandbox's root is the broker's
// user, host root, with no capability: files of another owner show there
// as nobody's and cannot be changed (Permission denied on every write),
// and what it creates belongs to host root. The Podman backend writes as a
// tree's owner (docs/podman.md).
func foreignOwners(g *grant.Grant) []string {
	if os.Geteuid() != 0 {
		return nil
	}
	var out []string
	for _, m := range g.Mounts() {
		var st unix.Stat_t
		if !m.Writable || unix.Lstat(m.Source, &st) != nil || st.Uid == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("read-write path %q belongs to uid %d, and airlock runs as root: the sandbox writes as root with no capability, so the files of uid %d show there as nobody's and cannot be changed, and what it creates belongs to root; run airlock as that user, or with --backend podman, which writes as the tree's owner", m.Source, st.Uid, st.Uid))
	}
	return out
}
