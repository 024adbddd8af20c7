package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
)

func logCommand() *command {
	c := &command{
		name:    "log",
		summary: "show the audit log: every call, its decision and outcome",
		usage: `airlock log [--session ID] [--follow] [--json] [--records DIR]

Shows the audit records of every session (or one), oldest first. --follow
keeps printing records as they are written.`,
	}
	c.run = func(ctx context.Context, env *Env, args []string) int {
		fs := newFlags(c, env)
		session := fs.String("session", "", "show only session `ID`")
		follow := fs.Bool("follow", false, "keep printing new records")
		asJSON := fs.Bool("json", false, "print records as JSON lines")
		records := fs.String("records", "", "records `DIR` (default $AIRLOCK_STATE_DIR or ~/.local/state/airlock)")
		if code := parseFlags(fs, args); code >= 0 {
			return code
		}
		if fs.NArg() != 0 {
			fs.Usage()
			return exitUsage
		}
		dir, err := recordsDir(env, *records)
		if err != nil {
			fmt.Fprintf(env.Stderr, "airlock log: %v\n", err)
			return exitFailure
		}
		if *session != "" && strings.ContainsAny(*session, `/\`) {
			fmt.Fprintf(env.Stderr, "airlock log: --session %q is not a session id\n", *session)
			return exitUsage
		}
		p := &logPrinter{w: env.Stdout, json: *asJSON, offsets: map[string]int64{}}
		if err := p.scan(dir, *session); err != nil {
			fmt.Fprintf(env.Stderr, "airlock log: %v\n", err)
			return exitFailure
		}
		p.flush()
		if !*follow {
			return exitOK
		}
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return exitOK
			case <-tick.C:
				if err := p.scan(dir, *session); err != nil {
					fmt.Fprintf(env.Stderr, "airlock log: %v\n", err)
					return exitFailure
				}
				p.flush()
			}
		}
	}
	return c
}

// logPrinter prints records from every audit file, remembering how far it
// has read each so --follow prints only new ones.
type logPrinter struct {
	w       io.Writer
	json    bool
	offsets map[string]int64
	pending []audit.Record
}

func (p *logPrinter) scan(root, session string) error {
	pattern := filepath.Join(root, "*", audit.FileName)
	if session != "" {
		pattern = filepath.Join(root, session, audit.FileName)
	}
	files, err := filepath.Glob(pattern)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := p.read(f); err != nil {
			return err
		}
	}
	return nil
}

func (p *logPrinter) read(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening %s: %w", path, err)
	}
	defer f.Close()
	off := p.offsets[path]
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	// Only whole lines: a record being written is read next time.
	end := strings.LastIndexByte(string(data), '\n') + 1
	if end == 0 {
		return nil
	}
	p.offsets[path] = off + int64(end)
	return audit.Decode(strings.NewReader(string(data[:end])), func(r audit.Record) error {
		p.pending = append(p.pending, r)
		return nil
	})
}

func (p *logPrinter) flush() {
	recs := p.pending
	p.pending = nil
	sortRecords(recs)
	if p.json {
		for _, r := range recs {
			b, _ := json.Marshal(r)
			fmt.Fprintf(p.w, "%s\n", b)
		}
		return
	}
	tw := tabwriter.NewWriter(p.w, 0, 4, 2, ' ', 0)
	for _, r := range recs {
		fmt.Fprintln(tw, formatRecord(r))
	}
	tw.Flush()
}

func sortRecords(recs []audit.Record) {
	slices.SortStableFunc(recs, func(a, b audit.Record) int { return a.Time.Compare(b.Time) })
}

// formatRecord renders one record as a tab-separated line.
func formatRecord(r audit.Record) string {
	ts := r.Time.Local().Format("2006-01-02 15:04:05.000")
	switch r.Kind {
	case audit.KindSession:
		return fmt.Sprintf("%s\t%s\tsession %s\t%s\t%s", ts, r.Session, r.Decision, r.Backend, r.Rule)
	case audit.KindEgress:
		verdict := "allowed"
		if r.Decision != "" {
			verdict = r.Decision
		}
		return fmt.Sprintf("%s\t%s\tegress\t%s:%d → %s\t%s %s", ts, r.Session, r.Host, r.Port, r.Addr, verdict, r.Rule)
	case audit.KindBackgroundStart, audit.KindBackgroundEnd:
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s %s", ts, r.Session, r.Kind, r.WorkID, r.Class, r.Detail)
	}
	outcome := r.Class
	if r.Decision == "refused" {
		outcome = "REFUSED: " + r.Reason
	}
	if len(r.LimitsHit) > 0 {
		outcome += " (hit: " + strings.Join(r.LimitsHit, ", ") + ")"
	}
	if len(r.Unenforced) > 0 {
		outcome += " (NOT ENFORCED: " + strings.Join(r.Unenforced, ", ") + ")"
	}
	args := string(r.Args)
	if len(args) > 80 {
		args = args[:77] + "..."
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%.1fms\t%s", ts, r.Session, r.CallID, r.Tool, outcome, r.Duration, args)
}
