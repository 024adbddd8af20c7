package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/airlockhq/airlock/internal/procid"
)

// TestConcurrentRecoverRecordsEachCallOnce: every start of airlock over a
// records directory recovers the sessions whose broker died, and several
// can start at once (an agent running airlock call or airlock exec for
// each of its parallel tool calls, after a crash). Each recovery read the
// dead session's slots and wrote their records, so two at once both
// recorded every call in flight as interrupted, and the session's close,
// twice. One recovery takes each dead session, and takes over one whose
// recovery died too.
func TestConcurrentRecoverRecordsEachCallOnce(t *testing.T) {
	root := t.TempDir()
	const sessions, recoverers = 40, 4
	dead, _ := json.Marshal(owner{Process: procid.ID("99999999-1")})
	for i := range sessions {
		id := fmt.Sprintf("ses_%02d", i)
		l, err := OpenLive(root, id)
		if err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			if err := l.Begin(InFlight{Kind: KindCall, CallID: fmt.Sprintf("call_%d", j), Tool: "shell"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(root, LiveDir, id, ownerFile), dead, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// One was being recovered by a process that died too: it is taken over.
	if err := os.Rename(filepath.Join(root, LiveDir, "ses_00"), filepath.Join(root, LiveDir, "ses_00"+recovering+"99999999-2")); err != nil {
		t.Fatal(err)
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range recoverers {
		wg.Go(func() {
			<-start
			Recover(root, nil)
		})
	}
	close(start)
	wg.Wait()
	recs, problems, err := ReadAll(root, "")
	if err != nil || len(problems) > 0 {
		t.Fatal(err, problems)
	}
	seen := map[string]int{}
	for _, r := range recs {
		seen[r.Session+"/"+r.Kind+"/"+r.CallID]++
	}
	twice := 0
	for k, n := range seen {
		if n != 1 {
			twice++
			if twice <= 3 {
				t.Errorf("%s recorded %d times", k, n)
			}
		}
	}
	if left, _ := os.ReadDir(filepath.Join(root, LiveDir)); len(left) != 0 {
		t.Errorf("%d live directories left after recovery, the first %s", len(left), left[0].Name())
	}
	if len(seen) != sessions*4 || twice > 0 {
		t.Errorf("%d of %d records written more than once; %d distinct, want %d", twice, len(seen), len(seen), sessions*4)
	}
}
