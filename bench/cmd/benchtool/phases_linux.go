package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

// cmdPhases runs /bin/true in N cold sandboxes of the airlock binary -exe
// (its init, started the way `airlock exec` starts it) and prints the
// median of each setup step the backend logs: the clone, the cgroup
// placement, exec to the init's Main (the Go runtime's start and package
// initialisation), and each phase inside the init. With -cwd the
// sandboxes get the current directory read-write and the default grant's
// protected paths, as airlock exec does there: hold is then the
// placeholders the host makes after the clone, and config_wait how long
// the init waited for them.
func cmdPhases(args []string) error {
	fs := flag.NewFlagSet("phases", flag.ContinueOnError)
	exe := fs.String("exe", "", "the airlock binary")
	n := fs.Int("n", 40, "sandboxes")
	cwd := fs.Bool("cwd", false, "grant the current directory read-write as airlock exec does, with the default grant's protected paths (placeholders for the missing ones)")
	state := fs.String("state", "", "the backend's state `DIR` (its placeholder journal and depot), as airlock's records directory is; none when empty")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *exe == "" {
		return fmt.Errorf("-exe is required")
	}
	steps := map[string][]time.Duration{}
	var order []string
	add := func(name string, ns int64) {
		if _, ok := steps[name]; !ok {
			order = append(order, name)
		}
		steps[name] = append(steps[name], time.Duration(ns))
	}
	h := &phaseHandler{add: add}
	b, err := linux.New(&linux.Options{Executable: *exe, Cgroups: linux.CgroupsOptional, StateDir: *state, Logger: slog.New(h)})
	if err != nil {
		return err
	}
	spec := &sandbox.Spec{Command: []string{"/bin/true"}, Env: []string{"PATH=/usr/bin:/bin"},
		Limits: sandbox.Limits{AllowUnenforced: os.Geteuid() != 0}}
	if *cwd {
		dir, err := os.Getwd()
		if err != nil {
			return err
		}
		g, err := grant.FromFlags(dir, grant.Flags{})
		if err != nil {
			return err
		}
		s := broker.SpecFor(g, g.LimitsFor("shell"))
		spec.Mounts, spec.Masks, spec.ReadOnly, spec.ReadOnlyDirs, spec.Cwd = s.Mounts, s.Masks, s.ReadOnly, s.ReadOnlyDirs, s.Cwd
	}
	for range *n {
		if _, err := b.Run(context.Background(), spec); err != nil {
			return err
		}
	}
	fmt.Printf("| step | median ms (%d runs) |\n|---|---:|\n", *n)
	for _, name := range order {
		d := steps[name]
		slices.Sort(d)
		fmt.Printf("| %s | %.2f |\n", name, float64(d[len(d)/2])/1e6)
	}
	return nil
}

// phaseHandler collects the "sandbox ready" record's durations.
type phaseHandler struct{ add func(string, int64) }

func (h *phaseHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *phaseHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *phaseHandler) WithGroup(string) slog.Handler            { return h }

func (h *phaseHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "sandbox ready" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if name, ok := strings.CutSuffix(a.Key, "_ns"); ok && a.Value.Kind() == slog.KindInt64 {
			h.add(name, a.Value.Int64())
		}
		if a.Key == "phases" {
			if ps, ok := a.Value.Any().([]initproto.Phase); ok {
				for _, p := range ps {
					h.add(p.Name, p.Nanos)
				}
			}
		}
		return true
	})
	return nil
}
