package grant

import (
	"path/filepath"
	"slices"
)

// Flags are grant values from the command line. Zero fields take the
// defaults of a grant file that omits them.
type Flags struct {
	ReadWrite, ReadOnly []string // granted paths; both empty means the cwd read-write
	Deny                []string // denied sub-paths
	WritableProtected   []string // protected names the sandbox may write (see ProtectedNames)
	AllowHosts          []string // network.hosts entries
	Private             []string // network.private entries
	PlainHTTP           []string // network.plain_http entries
	Tools               []string // enabled tools; nil means the default set
	Limits              Limits   // limits for every tool; zero fields take DefaultLimits
	// AllowUnenforcedLimits runs calls whose memory or process limit the
	// host cannot enforce, as limits.unenforced = "allow" does.
	AllowUnenforcedLimits bool
}

// FromFlags builds a grant from command-line values, with relative paths
// resolved against cwd (absolute). It validates exactly as Parse does; errors
// name the grant key the flag stands for, in a file called "flags".
func FromFlags(cwd string, f Flags) (*Grant, error) {
	s := &spec{
		source:            "flags",
		base:              cwd,
		readWrite:         slices.Clone(f.ReadWrite),
		readOnly:          slices.Clone(f.ReadOnly),
		deny:              slices.Clone(f.Deny),
		writableProtected: slices.Clone(f.WritableProtected),
		hosts:             slices.Clone(f.AllowHosts),
		private:           slices.Clone(f.Private),
		plainHTTP:         slices.Clone(f.PlainHTTP),
		limits:            f.Limits,
		unenforced:        unenforcedFlag(f, ""),
		tools:             slices.Clone(f.Tools),
		toolsSet:          f.Tools != nil,
	}
	if len(s.readWrite) == 0 && len(s.readOnly) == 0 {
		s.readWrite = []string{"."}
	}
	if !filepath.IsAbs(cwd) {
		return nil, &Error{File: "flags", Msg: "the working directory " + cwd + " is not absolute"}
	}
	var ps problems
	g := build(s, &ps)
	if len(ps.list) > 0 {
		return nil, report("flags", nil, &ps)
	}
	return g, nil
}

// unenforcedFlag is limits.unenforced after f: "allow" when f asks for it,
// else was.
func unenforcedFlag(f Flags, was string) string {
	if f.AllowUnenforcedLimits {
		return UnenforcedAllow
	}
	return was
}

// Default is the grant of a session started without one: cwd read-write,
// no network, DefaultLimits, and every tool but http_fetch (which has no host
// to reach).
func Default(cwd string) (*Grant, error) {
	return FromFlags(cwd, Flags{})
}
