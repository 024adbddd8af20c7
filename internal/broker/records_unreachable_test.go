package broker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// TestUnreachableRecordsDirIsNamed: a records directory that cannot be
// reached (under a file, say) is refused naming it as the records
// directory; the refusal spoke of "airlock's own path", which a user who
// gave --records could not tell from a grant or token file.
func TestUnreachableRecordsDirIsNamed(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	file := filepath.Join(t.TempDir(), "afile")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := broker.Open(&broker.Options{Grant: f.grant, Backend: sandboxtest.Native(t), RecordsDir: filepath.Join(file, "records")})
	if err == nil || !strings.Contains(err.Error(), "records directory") {
		t.Fatalf("broker.Open with records under a file: %v, want a refusal naming the records directory", err)
	}
}
