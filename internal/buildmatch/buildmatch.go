// Package buildmatch tells whether two Go binaries are one build: the same
// source, module graph, toolchain and build settings. airlock runs a
// separately built sandbox init (cmd/airlock-init) only when it is of the
// running binary's own build; an init from any other build could speak
// another version of the protocol or lack a restriction this one applies.
package buildmatch

import (
	"fmt"
	"runtime/debug"
	"slices"
)

// Stamp names the build when no version control or module version does (a
// tree with uncommitted changes, a git archive, a copy): set at link time,
// the same for every binary of the build and never reused for another
// source:
//
//	go build -ldflags "-X github.com/airlockhq/airlock/internal/buildmatch.Stamp=ID" ./cmd/...
//
// The linker flags are among the settings Same compares, so a binary
// stamped alike carries the same flags.
var Stamp string

// Same returns nil when other is a build of the same source as own with
// the same toolchain and settings (cgo's aside: cgoSettings), every module other links is one own
// links at the same version (a command of the module links a subset of
// them), and own's source is identified (a clean version-control checkout,
// a module version with its checksum, or Stamp); otherwise an error that
// names the first difference or why the source cannot be told. Which
// command of the module other is, is the caller's to check (its Path).
func Same(own, other *debug.BuildInfo) error {
	if own == nil || other == nil {
		return fmt.Errorf("a binary carries no build information")
	}
	if own.GoVersion != other.GoVersion {
		return fmt.Errorf("built by %s, not %s", other.GoVersion, own.GoVersion)
	}
	if !sameModule(&own.Main, &other.Main) {
		return fmt.Errorf("module %s, not %s", describe(&other.Main), describe(&own.Main))
	}
	deps := make(map[string]*debug.Module, len(own.Deps))
	for _, d := range own.Deps {
		deps[d.Path] = d
	}
	for _, d := range other.Deps {
		mine, ok := deps[d.Path]
		if !ok {
			return fmt.Errorf("it links %s, which this build does not", describe(d))
		}
		if !sameModule(mine, d) {
			return fmt.Errorf("dependency %s, not %s", describe(d), describe(mine))
		}
	}
	a, b := settings(own), settings(other)
	for _, k := range sortedKeys(a, b) {
		if a[k] != b[k] && !cgoSettings[k] {
			return fmt.Errorf("build setting %s is %q, not %q", k, b[k], a[k])
		}
	}
	switch {
	case a["vcs.revision"] != "" && a["vcs.modified"] == "false":
	case own.Main.Version != "" && own.Main.Version != "(devel)" && own.Main.Sum != "":
	case Stamp != "":
	case a["vcs.revision"] != "":
		return fmt.Errorf("this build's source is not identified: it was built from a checkout with uncommitted changes; " +
			"commit them, or " + stampHow)
	default:
		return fmt.Errorf("this build's source is not identified: it carries no version-control stamp " +
			"(built outside a git checkout, or with -buildvcs=false, which GOFLAGS may set: see go env GOFLAGS); " +
			"build both in a checkout with -buildvcs=true, or " + stampHow)
	}
	return nil
}

// stampHow ends the refusal of a build whose source cannot be told.
const stampHow = "build both with the same -ldflags \"-X github.com/airlockhq/airlock/internal/buildmatch.Stamp=ID\""

// cgoSettings are the build settings that may differ between the two
// binaries of one build: whether cgo is on, and how the C parts it builds
// are compiled. They decide how the init makes its per-thread credential
// changes, not what it does or the protocol it speaks; the init is best
// built without cgo (CGO_ENABLED=0: no dynamic loader to run, no C
// all-threads calls), airlock with it (its spawner locks each init down
// before the exec).
var cgoSettings = map[string]bool{"CGO_ENABLED": true, "CGO_CFLAGS": true, "CGO_CPPFLAGS": true, "CGO_CXXFLAGS": true, "CGO_LDFLAGS": true}

func sameModule(a, b *debug.Module) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Path != b.Path || a.Version != b.Version || a.Sum != b.Sum {
		return false
	}
	return sameModule(a.Replace, b.Replace)
}

func describe(m *debug.Module) string {
	if m == nil {
		return "none"
	}
	s := m.Path + "@" + m.Version
	if m.Replace != nil {
		s += " => " + describe(m.Replace)
	}
	return s
}

func settings(bi *debug.BuildInfo) map[string]string {
	m := make(map[string]string, len(bi.Settings))
	for _, s := range bi.Settings {
		m[s.Key] = s.Value
	}
	return m
}

func sortedKeys(a, b map[string]string) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
