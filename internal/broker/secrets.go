package broker

import (
	"slices"

	"github.com/airlockhq/airlock/grant"
)

// secretApplies reports whether rule gives its secret to a call of tool that
// reaches hosts: the tool must be named, and every host the call reaches must
// be one the secret may be sent to.
func secretApplies(rule grant.SecretRule, tool string, hosts []string) bool {
	if !slices.Contains(rule.Tools, tool) || len(hosts) == 0 {
		return false
	}
	for _, h := range hosts {
		if !rule.AllowsHost(h) {
			return false
		}
	}
	return true
}
