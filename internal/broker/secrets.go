package broker

import (
	"fmt"
	"slices"
	"sync"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/secret"
)

// SecretLoader reads the value of one of the grant's secrets from its
// source. Open tries every secret once, so that each readable value is
// redacted from the session's records from the first one on, and a secret
// that cannot be read then is no error: it is tried again when a call first
// needs it, and only that call fails. So a grant may name secrets a
// session's calls never use. It may be called from several goroutines at
// once. An error names the source, never a value.
type SecretLoader func(rule grant.SecretRule) (string, error)

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

// secretStore holds the secret values a session has loaded, and the
// redactor that hides every one of them from the records. Values given in
// Options.Secrets are there from the start; the rest are loaded on first
// use. A failed load is not kept: the next call that needs the secret tries
// again (a file written since, say).
type secretStore struct {
	load SecretLoader

	mu       sync.Mutex
	values   map[string]string
	redactor *secret.Redactor
}

func newSecretStore(given map[string]string, load SecretLoader) *secretStore {
	values := make(map[string]string, len(given))
	for k, v := range given {
		values[k] = v
	}
	return &secretStore{load: load, values: values, redactor: secret.NewRedactor(values)}
}

// preload tries to load every rule's secret, keeping those it can read:
// their values are then redacted from every record, even one written
// before a call uses them.
func (st *secretStore) preload(rules []grant.SecretRule) {
	for _, r := range rules {
		_, _ = st.get(r)
	}
}

// get returns the value of rule's secret, loading it if need be.
func (st *secretStore) get(rule grant.SecretRule) (string, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if v, ok := st.values[rule.Name]; ok {
		return v, nil
	}
	if st.load == nil {
		return "", fmt.Errorf("no value was given for it")
	}
	v, err := st.load(rule)
	if err != nil {
		return "", err
	}
	st.values[rule.Name] = v
	st.redactor = secret.NewRedactor(st.values)
	return v, nil
}

// redact returns the redactor for every secret loaded so far.
func (st *secretStore) redact() *secret.Redactor {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.redactor
}

// secretsFor returns the secrets the grant gives this tool for the hosts the
// call names, loading each on its first use. A secret that cannot be read
// fails the call with a sentence naming it and its source (never a value).
func (s *Session) secretsFor(name string, hosts []string) (map[string]string, error) {
	var out map[string]string
	for _, r := range s.opts.Grant.Secrets() {
		if !secretApplies(r, name, hosts) {
			continue
		}
		v, err := s.secrets.get(r)
		if err != nil {
			return nil, fmt.Errorf("this call needs the grant's secret %q, which could not be read: %w", r.Name, err)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[r.Name] = v
	}
	return out, nil
}

// LoadSecretFrom returns a SecretLoader that reads a secret from the source
// the grant names (secret.Load), with getenv for "env:" sources.
func LoadSecretFrom(getenv func(string) string) SecretLoader {
	return func(r grant.SecretRule) (string, error) { return secret.Load(r.Source, getenv) }
}
