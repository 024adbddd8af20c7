package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/airlockhq/airlock/bench/internal/results"
)

// metaFlag collects repeated -meta K=V flags in order.
type metaFlag struct {
	order []string
	vals  map[string]string
}

func (m *metaFlag) String() string { return "" }

func (m *metaFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("meta %q: want K=V", s)
	}
	if _, dup := m.vals[k]; !dup {
		m.order = append(m.order, k)
	}
	m.vals[k] = v
	return nil
}

// cmdReport gathers the rows into results.json and results.md.
func cmdReport(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	cells := fs.String("cells", "", "JSON-lines file of rows")
	jsonOut := fs.String("json", "", "results.json to write")
	mdOut := fs.String("md", "", "results.md to write")
	systems := fs.String("systems", "", "comma-separated systems in report order")
	meta := &metaFlag{vals: map[string]string{}}
	fs.Var(meta, "meta", "K=V for the run's header (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cells == "" || *jsonOut == "" || *mdOut == "" {
		return errors.New("-cells, -json and -md are required")
	}
	rows, err := results.ReadLines(*cells)
	if err != nil {
		return err
	}
	res := results.Build(rows, strings.Split(*systems, ","), meta.vals, meta.order)
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding results: %w", err)
	}
	if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing results: %w", err)
	}
	var md bytes.Buffer
	if err := res.Markdown(&md); err != nil {
		return err
	}
	if err := os.WriteFile(*mdOut, md.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing results: %w", err)
	}
	return nil
}
