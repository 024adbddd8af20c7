package cli

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set at link time (-ldflags "-X github.com/airlockhq/airlock/internal/cli.version=v1.2.3");
// otherwise it comes from the module's build information.
var version = ""

func versionString() string {
	v := version
	if v == "" {
		v = "(devel)"
		if bi, ok := debug.ReadBuildInfo(); ok {
			if bi.Main.Version != "" {
				v = bi.Main.Version
			}
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" && len(s.Value) >= 12 {
					v += " " + s.Value[:12]
				}
			}
		}
	}
	return fmt.Sprintf("airlock %s %s/%s %s", v, runtime.GOOS, runtime.GOARCH, runtime.Version())
}

func versionCommand() *command {
	c := &command{
		name:    "version",
		summary: "print airlock's version",
		usage:   "airlock version",
	}
	c.run = func(ctx context.Context, env *Env, args []string) int {
		fs := newFlags(c, env)
		if code := parseFlags(c, env, fs, args); code >= 0 {
			return code
		}
		fmt.Fprintln(env.Stdout, versionString())
		return exitOK
	}
	return c
}
