package toolserver_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/testenv"
)

// TestHandsRefuseMasksInFoldingTree: the hands' own grant masks nothing in
// a read-only tree, so loading it probed nothing; a broker's call that
// masks a path there is checked when it comes. A file system that may
// fold case (ramfs with .ENV a hard link to .env stands for one: this
// kernel has none) takes no mask, for it would cover one spelling only.
func TestHandsRefuseMasksInFoldingTree(t *testing.T) {
	ram := testenv.MountFS(t, "ramfs")
	secret := filepath.Join(ram, ".env")
	if err := os.WriteFile(secret, []byte("CANARY-folding\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(ram, ".ENV")); err != nil {
		t.Fatal(err)
	}
	hands, err := grant.Parse([]byte(`[paths]
read_only = ["`+ram+`"]
`), "hands.toml", ram)
	if err != nil {
		t.Fatalf("the hands' grant, which masks nothing there, was refused: %v", err)
	}
	_, url := serveGrant(t, hands)
	b := remote(t, url, nil)
	spec := broker.SpecFor(hands, hands.LimitsFor("shell"))
	spec.Masks = append(spec.Masks, secret)
	spec.Command = []string{"/bin/cat", filepath.Join(ram, ".ENV")}
	spec.Cwd = ram
	var stdout bytes.Buffer
	spec.Stdout = &stdout
	res, err := b.Run(context.Background(), spec)
	if strings.Contains(stdout.String(), "CANARY") {
		t.Fatalf("the masked file was read by another spelling: %q", stdout.String())
	}
	if err == nil || !strings.Contains(err.Error(), "fold case") {
		t.Fatalf("Run = %+v, %v; want it refused for folding case", res, err)
	}
}

// TestHandsTakeFileMountOnAnyFileSystem: a file granted read-write holds
// no name to mask, so the hands do not probe it for folding (a probe of a
// file could only fail, and the call would be refused for nothing).
func TestHandsTakeFileMountOnAnyFileSystem(t *testing.T) {
	ram := testenv.MountFS(t, "ramfs")
	notes := filepath.Join(ram, "notes.txt")
	if err := os.WriteFile(notes, []byte("a note\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	hands, err := grant.Parse([]byte(`[paths]
read_write = ["`+work+`", "`+notes+`"]
`), "hands.toml", work)
	if err != nil {
		t.Fatal(err)
	}
	_, url := serveGrant(t, hands)
	b := remote(t, url, nil)
	spec := broker.SpecFor(hands, hands.LimitsFor("shell"))
	spec.Command = []string{"/bin/cat", notes}
	spec.Cwd = work
	var stdout bytes.Buffer
	spec.Stdout = &stdout
	res, err := b.Run(context.Background(), spec)
	if err != nil || res.ExitCode != 0 || stdout.String() != "a note\n" {
		t.Fatalf("Run = %+v, %v, stdout %q; want the file read", res, err, stdout.String())
	}
}
