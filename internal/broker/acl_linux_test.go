package broker_test

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandboxtest"
	"github.com/airlockhq/airlock/internal/testenv"
)

// posixACL encodes an access ACL as the kernel's system.posix_acl_access
// value: a version, then (tag, perm, id) entries.
func posixACL(entries ...[3]uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, uint16(e[0]))
		b = binary.LittleEndian.AppendUint16(b, uint16(e[1]))
		b = binary.LittleEndian.AppendUint32(b, e[2])
	}
	return b
}

const (
	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclMask     = 0x10
	aclOther    = 0x20
	aclNoID     = 0xffffffff
)

// TestWriteKeepsAccessACL: a file whose access ACL gives one named user
// read-write and its own group nothing shows the ACL's mask as its group
// bits (rw). write_file and edit_file replace the file with a new inode:
// given only the old file's mode, the new file would hand its owning group
// the named user's read-write, access the user never granted that group.
// After either write the ACL is the one the user set (the sandbox cannot
// name user 4242, so the file is written in place).
func TestWriteKeepsAccessACL(t *testing.T) {
	ws := t.TempDir()
	dir := filepath.Join(ws, "rw")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "secret.txt")
	if err := os.WriteFile(p, []byte("alpha\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	acl := posixACL(
		[3]uint32{aclUserObj, 6, aclNoID},
		[3]uint32{aclUser, 6, 4242},
		[3]uint32{aclGroupObj, 0, aclNoID},
		[3]uint32{aclMask, 6, aclNoID},
		[3]uint32{aclOther, 0, aclNoID},
	)
	if err := unix.Setxattr(p, "system.posix_acl_access", acl, 0); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			testenv.RequireFeature(t, "POSIX ACLs on the temporary directory's file system: "+err.Error())
		}
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o660 {
		t.Fatalf("mode after setting the ACL = %v (%v), want 0660 (the mask as group bits)", fi.Mode(), err)
	}
	g, err := grant.FromFlags(ws, grant.Flags{ReadWrite: []string{dir}})
	if err != nil {
		t.Fatalf("grant.FromFlags: %v", err)
	}
	s, err := broker.Open(&broker.Options{Grant: g, Backend: sandboxtest.Native(t), RecordsDir: t.TempDir()})
	if err != nil {
		t.Fatalf("broker.Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })

	for _, c := range []struct{ tool, args string }{
		{"write_file", `{"path":"secret.txt","content":"written\n"}`},
		{"edit_file", `{"path":"secret.txt","old_string":"written","new_string":"edited"}`},
	} {
		res := call(t, s, c.tool, c.args)
		if res.Class != broker.ClassOK || res.Output.IsError {
			t.Fatalf("%s: class %s, output %q", c.tool, res.Class, res.Output.Content)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 256)
		n, xerr := unix.Getxattr(p, "system.posix_acl_access", buf)
		hasACL := xerr == nil && n > 0
		if !hasACL && fi.Mode().Perm()&0o070 != 0 {
			t.Errorf("after %s: %s has mode %v and no ACL: its group, which had no access, may now read and write it", c.tool, p, fi.Mode())
		}
		if hasACL && string(buf[:n]) != string(acl) {
			t.Errorf("after %s: the ACL changed: %x, want %x", c.tool, buf[:n], acl)
		}
	}
}

// TestWriteKeepsGroup: a replacement the sandbox cannot give the old
// file's group (a group outside its user namespace) got the caller's group
// or, in a setgid directory, the directory's, with the old group bits: a
// file only its own group could read (0640) became readable by another.
func TestWriteKeepsGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.RequireFeature(t, "giving a file a group of another needs root")
	}
	ws := t.TempDir()
	dir := filepath.Join(ws, "rw")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const dirGroup, fileGroup = 2345, 3456
	if err := os.Chown(dir, -1, dirGroup); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o2775); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "team.txt")
	if err := os.WriteFile(p, []byte("alpha\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, -1, fileGroup); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o640); err != nil {
		t.Fatal(err)
	}
	g, err := grant.FromFlags(ws, grant.Flags{ReadWrite: []string{dir}})
	if err != nil {
		t.Fatalf("grant.FromFlags: %v", err)
	}
	s, err := broker.Open(&broker.Options{Grant: g, Backend: sandboxtest.Native(t), RecordsDir: t.TempDir()})
	if err != nil {
		t.Fatalf("broker.Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	for _, c := range []struct{ tool, args, want string }{
		{"write_file", `{"path":"team.txt","content":"written\n"}`, "written\n"},
		{"edit_file", `{"path":"team.txt","old_string":"written","new_string":"edited"}`, "edited\n"},
	} {
		res := call(t, s, c.tool, c.args)
		if res.Class != broker.ClassOK || res.Output.IsError {
			t.Fatalf("%s: class %s, output %q", c.tool, res.Class, res.Output.Content)
		}
		if b, _ := os.ReadFile(p); string(b) != c.want {
			t.Errorf("after %s: %q, want %q", c.tool, b, c.want)
		}
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		if st.Gid != fileGroup && st.Mode&0o070 != 0 {
			t.Errorf("after %s: group %d has mode %o on %s, which only group %d could read", c.tool, st.Gid, st.Mode&0o7777, p, fileGroup)
		}
	}
}

// TestWriteTakesNoDefaultACL: a file with no ACL in a directory with a
// default ACL (one set after the file was made) keeps having none. The
// replacement is a new file in that directory, which inherits the default:
// user 4242, who could not open the file before, could read and write it.
func TestWriteTakesNoDefaultACL(t *testing.T) {
	ws := t.TempDir()
	dir := filepath.Join(ws, "rw")
	if err := os.Mkdir(dir, 0o770); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(p, []byte("alpha\n"), 0o660); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o660); err != nil {
		t.Fatal(err)
	}
	def := posixACL(
		[3]uint32{aclUserObj, 7, aclNoID},
		[3]uint32{aclUser, 6, 4242},
		[3]uint32{aclGroupObj, 7, aclNoID},
		[3]uint32{aclMask, 7, aclNoID},
		[3]uint32{aclOther, 0, aclNoID},
	)
	if err := unix.Setxattr(dir, "system.posix_acl_default", def, 0); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			testenv.RequireFeature(t, "POSIX ACLs on the temporary directory's file system: "+err.Error())
		}
		t.Fatal(err)
	}
	g, err := grant.FromFlags(ws, grant.Flags{ReadWrite: []string{dir}})
	if err != nil {
		t.Fatalf("grant.FromFlags: %v", err)
	}
	s, err := broker.Open(&broker.Options{Grant: g, Backend: sandboxtest.Native(t), RecordsDir: t.TempDir()})
	if err != nil {
		t.Fatalf("broker.Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	for _, c := range []struct{ tool, args string }{
		{"write_file", `{"path":"notes.txt","content":"written\n"}`},
		{"edit_file", `{"path":"notes.txt","old_string":"written","new_string":"edited"}`},
	} {
		res := call(t, s, c.tool, c.args)
		if res.Class != broker.ClassOK || res.Output.IsError {
			t.Fatalf("%s: class %s, output %q", c.tool, res.Class, res.Output.Content)
		}
		buf := make([]byte, 256)
		if n, err := unix.Getxattr(p, "system.posix_acl_access", buf); err == nil {
			t.Errorf("after %s: %s has the access ACL %x, where it had none", c.tool, p, buf[:n])
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o660 {
			t.Errorf("after %s: mode %v (%v), want 0660", c.tool, fi.Mode(), err)
		}
	}
	// A file made new takes the default, as any new file there does.
	if res := call(t, s, "write_file", `{"path":"new.txt","content":"new\n"}`); res.Output.IsError {
		t.Fatalf("write_file new.txt: %q", res.Output.Content)
	}
}

// TestWriteKeepsUserXattrs: a replaced file keeps its user extended
// attributes (a desktop's tags, a sync client's ids), as it keeps its mode:
// the new inode had none of them.
func TestWriteKeepsUserXattrs(t *testing.T) {
	ws := t.TempDir()
	dir := filepath.Join(ws, "rw")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "tagged.txt")
	if err := os.WriteFile(p, []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(p, "user.xdg.tags", []byte("important"), 0); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			testenv.RequireFeature(t, "user extended attributes on the temporary directory's file system: "+err.Error())
		}
		t.Fatal(err)
	}
	g, err := grant.FromFlags(ws, grant.Flags{ReadWrite: []string{dir}})
	if err != nil {
		t.Fatalf("grant.FromFlags: %v", err)
	}
	s, err := broker.Open(&broker.Options{Grant: g, Backend: sandboxtest.Native(t), RecordsDir: t.TempDir()})
	if err != nil {
		t.Fatalf("broker.Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	for _, c := range []struct{ tool, args string }{
		{"write_file", `{"path":"tagged.txt","content":"written\n"}`},
		{"edit_file", `{"path":"tagged.txt","old_string":"written","new_string":"edited"}`},
	} {
		res := call(t, s, c.tool, c.args)
		if res.Class != broker.ClassOK || res.Output.IsError {
			t.Fatalf("%s: class %s, output %q", c.tool, res.Class, res.Output.Content)
		}
		buf := make([]byte, 64)
		n, err := unix.Getxattr(p, "user.xdg.tags", buf)
		if err != nil || string(buf[:n]) != "important" {
			t.Errorf("after %s: user.xdg.tags = %q (%v), want %q", c.tool, buf[:max(n, 0)], err, "important")
		}
	}
}
