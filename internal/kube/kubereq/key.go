package kubereq

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
)

// A session key is the broker's root of trust for its session: the
// helper derives the session's token and TLS key from it, so a Secret
// another party puts in the session's place (its own certificate, with
// the session's labels) between two connections is refused. It is a
// secret: the broker writes it on the helper's stdin, before the frames,
// never in the request, an argument or the environment.
//
//	broker                                 airlock-kube connect REQUEST
//	  | "airlock-kube-key " 64 hex "\n" -->  ReadKey (exactly KeyPreludeLen bytes)
//	  | <======== frames both ways ======>  relay
const (
	// KeyLen is a session key's length in bytes.
	KeyLen = 32
	// KeyPreludeLen is the length of the line WriteKey writes.
	KeyPreludeLen = len(keyPrefix) + 2*KeyLen + 1
	keyPrefix     = "airlock-kube-key "
)

// NewKey returns a random session key.
func NewKey() []byte {
	k := make([]byte, KeyLen)
	_, _ = rand.Read(k)
	return k
}

// WriteKey writes the session key prelude to the helper's stdin.
func WriteKey(w io.Writer, key []byte) error {
	if len(key) != KeyLen {
		return fmt.Errorf("a session key is %d bytes, not %d", KeyLen, len(key))
	}
	_, err := io.WriteString(w, keyPrefix+hex.EncodeToString(key)+"\n")
	return err
}

// ReadKey reads the session key prelude: exactly KeyPreludeLen bytes, so
// the frames after it stay unread. Its errors never hold what was read.
func ReadKey(r io.Reader) ([]byte, error) {
	b := make([]byte, KeyPreludeLen)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("reading the session key on stdin: %w", err)
	}
	bad := errors.New("stdin does not start with the session key line (\"" + keyPrefix + "\" and 64 hex digits): a broker's session needs its key")
	if string(b[:len(keyPrefix)]) != keyPrefix || b[len(b)-1] != '\n' {
		return nil, bad
	}
	k, err := hex.DecodeString(string(b[len(keyPrefix) : len(b)-1]))
	if err != nil || len(k) != KeyLen {
		return nil, bad
	}
	return k, nil
}
