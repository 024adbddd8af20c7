//go:build !linux

package cli

import "github.com/airlockhq/airlock/internal/sandbox"

// attachTerminal does nothing where there is no native sandbox.
func attachTerminal(env *Env, spec *sandbox.Spec) (func(), error) {
	return func() {}, nil
}

// stdinIsTerminal is false where there is no native sandbox.
func stdinIsTerminal(env *Env) bool { return false }
