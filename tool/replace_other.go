//go:build !linux

package tool

import (
	"errors"
	"os"
)

// errNoLink: an unnamed file cannot be given a name here.
var errNoLink = errors.ErrUnsupported

// openUnnamed: only Linux makes a file with no name (O_TMPFILE); elsewhere
// the temporary file is made by name.
func openUnnamed(*os.File, string, os.FileMode) (*os.File, error) { return nil, errors.ErrUnsupported }

func linkUnnamed(*os.File, *os.File, string) error { return errNoLink }
