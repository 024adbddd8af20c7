//go:build !linux

package inside

import (
	"context"
	"fmt"
	"io"
	"os"
)

// Tool is what the init of a tool-mode sandbox runs; see the Linux build.
type Tool struct {
	Run  func(ctx context.Context, start func(func() error) error, hidden, candidates []string, stdin io.Reader, stdout, stderr io.Writer) int
	Warm func()
}

// Main is the sandbox init; it exists only on Linux.
func Main(t Tool) int {
	fmt.Fprintln(os.Stderr, "airlock: the Linux sandbox init runs only on Linux")
	return 125
}
