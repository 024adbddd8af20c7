package grant

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestExamples keeps the grants in examples/ valid.
func TestExamples(t *testing.T) {
	for _, name := range []string{"grant.toml", "minimal.toml"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("..", "examples", name)
			g, err := Load(path)
			if err != nil {
				t.Fatalf("Load(%s): %v", path, err)
			}
			dir, err := filepath.Abs(filepath.Dir(path))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(g.Mounts(), Mount{Source: dir, Writable: true, Dir: true}) {
				t.Errorf("%s does not grant its own directory read-write: %v", name, g.Mounts())
			}
		})
	}
}
