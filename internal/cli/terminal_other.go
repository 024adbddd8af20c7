//go:build !linux

package cli

import (
	"context"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// attachTerminal does nothing where there is no native sandbox.
func attachTerminal(ctx context.Context, env *Env, spec *sandbox.Spec) (func(), context.Context, error) {
	return func() {}, ctx, nil
}
