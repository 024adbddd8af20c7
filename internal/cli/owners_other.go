//go:build !linux

package cli

import "github.com/airlockhq/airlock/grant"

// foreignOwners is Linux's alone (owners_linux.go): no other host has the
// native sandbox.
func foreignOwners(*grant.Grant) []string { return nil }
