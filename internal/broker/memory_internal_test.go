package broker

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/sandbox"
)

// blockingBackend holds every run until release is closed.
type blockingBackend struct {
	started chan struct{}
	release chan struct{}
}

func (b *blockingBackend) Run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	b.started <- struct{}{}
	<-b.release
	return &sandbox.Result{ExitCode: 0}, nil
}

func (b *blockingBackend) Report() sandbox.Report { return sandbox.Report{Backend: "blocking"} }

func writeArgs(n int) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"path": "f", "content": strings.Repeat("x", n)})
	return b
}

// TestCallBytesBounded (issue 11.8): one call's arguments and those of all
// calls in flight are capped, each past the cap refused before it runs with
// a sentence naming the cap, and a large write's audit record keeps its
// content abridged, with the length and hash of the whole arguments.
func TestCallBytesBounded(t *testing.T) {
	ws := t.TempDir()
	g, err := grant.FromFlags(ws, grant.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	b := &blockingBackend{started: make(chan struct{}, 8), release: make(chan struct{})}
	records := t.TempDir()
	s, err := Open(&Options{Grant: g, Backend: b, RecordsDir: records, Pool: -1, MaxCallBytes: 3 << 20, MaxInFlightBytes: 5 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()

	res, err := s.Call(ctx, "write_file", writeArgs(4<<20))
	if err != nil || !res.Refused() || !strings.Contains(res.Output.Content, "the most one call may carry is 3145728 bytes") {
		t.Fatalf("a 4 MiB call: %+v, %v; want a refusal naming the cap", res, err)
	}
	// Two 2 MiB writes run (held by the backend); a third would pass 5 MiB.
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if res, err := s.Call(ctx, "write_file", writeArgs(2<<20)); err != nil || res.Refused() {
				t.Errorf("a 2 MiB write: %+v, %v", res, err)
			}
		})
	}
	<-b.started
	<-b.started
	res, err = s.Call(ctx, "write_file", writeArgs(2<<20))
	if err != nil || !res.Refused() || !strings.Contains(res.Output.Content, "busy") {
		t.Fatalf("a third write past the session's bytes in flight: %+v, %v; want busy", res, err)
	}
	close(b.release)
	wg.Wait()
	if res, err := s.Call(ctx, "write_file", writeArgs(2<<20)); err != nil || res.Refused() {
		t.Fatalf("a write once the others finished: %+v, %v", res, err)
	}
	recs, _, err := audit.ReadAll(records, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if len(r.Args) > 8<<10 {
			t.Errorf("an audit record holds %d bytes of arguments", len(r.Args))
		}
		if r.Tool == "write_file" && r.Decision == "allowed" && (!strings.Contains(string(r.Args), "…[2097152× x]…") || r.ArgsBytes != len(writeArgs(2<<20)) || r.ArgsSHA256 == "") {
			t.Errorf("a large write's record does not say its size and hash: %.200s, %d bytes, sha256 %q", r.Args, r.ArgsBytes, r.ArgsSHA256)
		}
	}
}
