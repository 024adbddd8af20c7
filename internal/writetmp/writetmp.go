// Package writetmp owns the temporary files write_file and edit_file write
// a file's new content to before it replaces the file: their names, which
// carry the call's tag, and their removal when the call was killed before
// it could remove one itself.
//
// A temporary file is named .NAME.airlock-TAG-RRRRRRRR.tmp, beside the file
// NAME it replaces: TAG is the call's (Tag: the 16 random hex digits of its
// id), R random. Where the file system lets it, the file has no name while
// its content is written (O_TMPFILE) and gets this one only for the rename
// over NAME, or none at all for a new file (see tool/replace.go). The broker
// journals the directories a call may write in before the call runs (its
// in-flight record), and Sweep removes, in one such directory, only the
// regular files whose name carries that call's tag: nothing a user made
// can have that name, since the tag is random and only that call had it.
package writetmp

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// maxBase is the longest part of the replaced file's name a temporary
// name keeps, so that the temporary name fits where the name did.
const maxBase = 64

// tagLen is the length of a tag: 16 hex digits.
const tagLen = 16

// Tag returns the tag of the call callID ("call_" and 16 hex digits, as
// the broker makes them): its hex digits. Any other id gets a random tag,
// so its temporary files still have names of their own; no journal names
// such a tag, so they are not swept.
func Tag(callID string) string {
	if t, ok := strings.CutPrefix(callID, "call_"); ok && validTag(t) {
		return t
	}
	b := make([]byte, tagLen/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Name returns a temporary name for a file replacing base, with the call's
// tag and a random part of its own.
func Name(base, tag string) string {
	if len(base) > maxBase {
		base = base[:maxBase]
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "." + base + ".airlock-" + tag + "-" + hex.EncodeToString(b) + ".tmp"
}

// Matches reports whether name is a temporary name (Name) with tag.
func Matches(name, tag string) bool {
	if !validTag(tag) {
		return false
	}
	rest, ok := strings.CutSuffix(name, ".tmp")
	if !ok || len(rest) < 8 || !isHex(rest[len(rest)-8:]) {
		return false
	}
	rest, ok = strings.CutSuffix(rest[:len(rest)-8], ".airlock-"+tag+"-")
	return ok && len(rest) >= 2 && rest[0] == '.'
}

func validTag(t string) bool { return len(t) == tagLen && isHex(t) }

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
