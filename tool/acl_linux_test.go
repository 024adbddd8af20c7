package tool

import (
	"encoding/binary"
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/testenv"
)

func testACL(entries ...[3]uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, uint16(e[0]))
		b = binary.LittleEndian.AppendUint16(b, uint16(e[1]))
		b = binary.LittleEndian.AppendUint32(b, e[2])
	}
	return b
}

// TestReplaceKeepsACL: outside a sandbox (every id known) the access ACL of
// a replaced file is copied as it was; the sandbox's case, where it cannot
// be, is internal/broker's TestWriteKeepsAccessACL.
func TestReplaceKeepsACL(t *testing.T) {
	w := newWorkspace(t)
	p := w.write(t, "a.txt", "alpha\n")
	acl := testACL(
		[3]uint32{0x01, 6, aclUndefinedID},
		[3]uint32{aclTagUser, 6, 4242},
		[3]uint32{0x04, 0, aclUndefinedID},
		[3]uint32{0x10, 6, aclUndefinedID},
		[3]uint32{0x20, 0, aclUndefinedID},
	)
	if err := unix.Setxattr(p, aclAccess, acl, 0); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			testenv.RequireFeature(t, "POSIX ACLs here: "+err.Error())
		}
		t.Fatal(err)
	}
	for _, args := range []string{
		`{"path":"a.txt","content":"written\n"}`,
	} {
		if out := call(t, w.env(), "write_file", args); out.IsError {
			t.Fatalf("write_file: %s", out.Content)
		}
		buf := make([]byte, 256)
		n, err := unix.Getxattr(p, aclAccess, buf)
		if err != nil || string(buf[:n]) != string(acl) {
			t.Errorf("ACL after write_file = %x (%v), want %x", buf[:max(n, 0)], err, acl)
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o660 {
			t.Errorf("mode after write_file = %v (%v), want 0660", fi.Mode(), err)
		}
	}
}
