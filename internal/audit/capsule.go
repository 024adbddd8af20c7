package audit

// Capsule identifies a WebAssembly capsule in the records: what ran, pinned
// by the hash of its module.
type Capsule struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	SHA256  string `json:"sha256"`
}
