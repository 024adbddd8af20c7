//go:build !linux

package inside

import (
	"fmt"
	"io"
	"os"
)

// Main is the sandbox init; it exists only on Linux.
func Main(runTool func(start func(func() error) error, stdin io.Reader, stdout, stderr io.Writer) int) int {
	fmt.Fprintln(os.Stderr, "airlock: the Linux sandbox init runs only on Linux")
	return 125
}
