package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
)

// hostKey tells this machine's boot and pid namespace from any other's,
// where two share a host name: the first 8 hex digits of a hash of the
// kernel's boot id and the pid namespace's inode. "" when either cannot
// be read.
func hostKey() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(string(boot)) + "\n" + ns))
	return hex.EncodeToString(sum[:4])
}
