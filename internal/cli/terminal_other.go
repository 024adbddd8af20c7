//go:build !linux

package cli

import "github.com/airlockhq/airlock/internal/sandbox"

// attachTerminal does nothing where there is no native sandbox.
func attachTerminal(env *Env, spec *sandbox.Spec) (func(), error) {
	return func() {}, nil
}

// execTerminal is false where there is no native sandbox.
func execTerminal(env *Env) bool { return false }
