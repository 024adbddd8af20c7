package buildmatch

import (
	"runtime/debug"
	"strings"
	"testing"
)

func info(mod func(*debug.BuildInfo)) *debug.BuildInfo {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Path:      "github.com/airlockhq/airlock/cmd/airlock",
		Main:      debug.Module{Path: "github.com/airlockhq/airlock", Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "golang.org/x/sys", Version: "v0.50.0", Sum: "h1:sys"},
			{Path: "github.com/tetratelabs/wazero", Version: "v1.12.0", Sum: "h1:wazero"},
		},
		Settings: []debug.BuildSetting{
			{Key: "CGO_ENABLED", Value: "1"},
			{Key: "GOARCH", Value: "amd64"},
			{Key: "vcs.revision", Value: "8734e69"},
			{Key: "vcs.modified", Value: "false"},
		},
	}
	if mod != nil {
		mod(bi)
	}
	return bi
}

func set(key, value string) func(*debug.BuildInfo) {
	return func(bi *debug.BuildInfo) {
		for i, s := range bi.Settings {
			if s.Key == key {
				bi.Settings[i].Value = value
				return
			}
		}
		bi.Settings = append(bi.Settings, debug.BuildSetting{Key: key, Value: value})
	}
}

// TestSame: the init of one build matches; a difference in the toolchain,
// the module, a dependency, a setting, or a source no one can tell apart
// does not, and the error names it.
func TestSame(t *testing.T) {
	initOf := func(mod func(*debug.BuildInfo)) *debug.BuildInfo {
		return info(func(bi *debug.BuildInfo) {
			bi.Path = "github.com/airlockhq/airlock/cmd/airlock-init"
			bi.Deps = bi.Deps[:1] // the init links fewer modules
			if mod != nil {
				mod(bi)
			}
		})
	}
	for _, tc := range []struct {
		name  string
		own   *debug.BuildInfo
		other *debug.BuildInfo
		stamp string
		says  string // "" means a match
	}{
		{"one clean build", info(nil), initOf(nil), "", ""},
		{"a module release", info(func(bi *debug.BuildInfo) {
			bi.Main.Version, bi.Main.Sum, bi.Settings = "v1.4.0", "h1:rel", nil
		}), initOf(func(bi *debug.BuildInfo) { bi.Main.Version, bi.Main.Sum, bi.Settings = "v1.4.0", "h1:rel", nil }), "", ""},
		{"another toolchain", info(nil), initOf(func(bi *debug.BuildInfo) { bi.GoVersion = "go1.25.3" }), "", "go1.25.3"},
		{"another revision", info(nil), initOf(set("vcs.revision", "0000000")), "", "vcs.revision"},
		{"another module version", info(nil), initOf(func(bi *debug.BuildInfo) { bi.Main.Version = "v1.3.0" }), "", "module"},
		{"another dependency version", info(nil), initOf(func(bi *debug.BuildInfo) { bi.Deps[0].Version = "v0.49.0" }), "", "v0.49.0"},
		{"a replaced dependency", info(nil), initOf(func(bi *debug.BuildInfo) {
			bi.Deps[0].Replace = &debug.Module{Path: "../sys"}
		}), "", "=> ../sys"},
		{"a dependency the broker lacks", info(nil), initOf(func(bi *debug.BuildInfo) {
			bi.Deps = append(bi.Deps, &debug.Module{Path: "example.com/evil", Version: "v1.0.0"})
		}), "", "example.com/evil"},
		{"the init without cgo", info(set("CGO_CFLAGS", "-O2 -g")), initOf(set("CGO_ENABLED", "0")), "", ""},
		{"the init with other C flags", info(set("CGO_CFLAGS", "-O2 -g")), initOf(set("CGO_CFLAGS", "-O0")), "", ""},
		{"other linker flags", info(set("-ldflags", "-s -w")), initOf(nil), "", "-ldflags"},
		{"an extra setting", info(nil), initOf(set("-tags", "netgo")), "", "-tags"},
		{"uncommitted changes", info(set("vcs.modified", "true")), initOf(set("vcs.modified", "true")), "", "uncommitted changes"},
		{"no version control", info(func(bi *debug.BuildInfo) { bi.Settings = nil }), initOf(func(bi *debug.BuildInfo) { bi.Settings = nil }), "", "-buildvcs=false"},
		{"uncommitted but stamped", info(set("vcs.modified", "true")), initOf(set("vcs.modified", "true")), "build-7", ""},
		{"no build information", info(nil), nil, "", "no build information"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := Stamp
			Stamp = tc.stamp
			defer func() { Stamp = old }()
			err := Same(tc.own, tc.other)
			switch {
			case tc.says == "" && err != nil:
				t.Errorf("Same = %v, want a match", err)
			case tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says)):
				t.Errorf("Same = %v, want an error saying %q", err, tc.says)
			}
		})
	}
}
