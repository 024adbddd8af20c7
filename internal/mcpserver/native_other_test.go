//go:build !linux

package mcpserver_test

import "github.com/airlockhq/airlock/internal/sandbox"

func sandboxMode(string) (int, bool) { return 0, false }

func newNative() (sandbox.Backend, error) { return nil, sandbox.ErrUnsupported }
