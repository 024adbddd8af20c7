package inside

import (
	"os"
	"testing"
)

// TestBrokerGone: the init tells a broker that died before its
// PR_SET_PDEATHSIG (the status pipe's read end closed) from a live one.
func TestBrokerGone(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if brokerGone(int(w.Fd())) {
		t.Fatal("a pipe whose reader is open was taken for a dead broker")
	}
	r.Close()
	if !brokerGone(int(w.Fd())) {
		t.Fatal("a pipe whose reader has closed was taken for a live broker")
	}
}
