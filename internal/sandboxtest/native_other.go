//go:build !linux

package sandboxtest

import "github.com/airlockhq/airlock/internal/sandbox"

const sandboxMode = "__sandbox"

func sandboxMain() int { return 69 }

func newNative() (sandbox.Backend, error) { return nil, sandbox.ErrUnsupported }
