package grant

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Limits bound one tool call. In a Grant every field is set (positive).
type Limits struct {
	Time      time.Duration // wall time of the call
	Memory    int64         // bytes of memory, including tmpfs pages
	Processes int           // processes and threads
	Output    int64         // bytes of output the model may read
	FileSize  int64         // largest file the call may write (RLIMIT_FSIZE) or read whole
	Tmp       int64         // size of the private /tmp
}

// DefaultLimits are the limits of a grant that sets none.
var DefaultLimits = Limits{
	Time:      120 * time.Second,
	Memory:    1 << 30,
	Processes: 256,
	Output:    1 << 20,
	FileSize:  256 << 20,
	Tmp:       256 << 20,
}

// Bounds on limits: values outside are refused as mistakes.
const (
	maxTime      = 24 * time.Hour
	minMemory    = 16 << 20
	maxMemory    = 1 << 40
	maxProcesses = 1 << 16
	minOutput    = 1 << 10
	maxOutput    = 1 << 30
	maxBytes     = 1 << 40
)

// over returns l with every non-zero field of o replacing it.
func (l Limits) over(o Limits) Limits {
	if o.Time != 0 {
		l.Time = o.Time
	}
	if o.Memory != 0 {
		l.Memory = o.Memory
	}
	if o.Processes != 0 {
		l.Processes = o.Processes
	}
	if o.Output != 0 {
		l.Output = o.Output
	}
	if o.FileSize != 0 {
		l.FileSize = o.FileSize
	}
	if o.Tmp != 0 {
		l.Tmp = o.Tmp
	}
	return l
}

// check reports limits outside sane bounds. Zero fields mean "not set".
func (l Limits) check(key []string, ps *problems) {
	sub := func(k string) []string { return append(key[:len(key):len(key)], k) }
	if l.Time < 0 || l.Time > maxTime {
		ps.add(sub("time"), "%s is outside 1ns..%s", l.Time, maxTime)
	}
	if l.Memory != 0 && (l.Memory < minMemory || l.Memory > maxMemory) {
		ps.add(sub("memory"), "%s is outside %s..%s", FormatSize(l.Memory), FormatSize(minMemory), FormatSize(maxMemory))
	}
	if l.Processes < 0 || l.Processes > maxProcesses {
		ps.add(sub("processes"), "%d is outside 1..%d", l.Processes, maxProcesses)
	}
	if l.Output != 0 && (l.Output < minOutput || l.Output > maxOutput) {
		ps.add(sub("output"), "%s is outside %s..%s", FormatSize(l.Output), FormatSize(minOutput), FormatSize(maxOutput))
	}
	if l.FileSize < 0 || l.FileSize > maxBytes {
		ps.add(sub("file_size"), "%s is outside 1B..%s", FormatSize(l.FileSize), FormatSize(maxBytes))
	}
	if l.Tmp < 0 || l.Tmp > maxBytes {
		ps.add(sub("tmp"), "%s is outside 1B..%s", FormatSize(l.Tmp), FormatSize(maxBytes))
	}
}

// unenforcedFromTOML takes limits.unenforced out of the [limits] table v
// into s, and returns the rest of the table for limitsFromTOML.
func unenforcedFromTOML(s *spec, v any, key []string, ps *problems) any {
	t, ok := v.(map[string]any)
	if !ok {
		return v
	}
	u, ok := t["unenforced"]
	if !ok {
		return v
	}
	rest := make(map[string]any, len(t))
	for k, x := range t {
		if k != "unenforced" {
			rest[k] = x
		}
	}
	switch str, _ := u.(string); str {
	case UnenforcedRefuse, UnenforcedAllow:
		s.unenforced = str
	default:
		what := tomlType(u)
		if _, ok := u.(string); ok {
			what = fmt.Sprintf("%q", str)
		}
		ps.add(keyUnenforced, "must be %q or %q, not %s", UnenforcedRefuse, UnenforcedAllow, what)
	}
	return rest
}

// limitsFromTOML reads a [limits]-shaped table; unset fields stay zero.
func limitsFromTOML(v any, key []string, ps *problems) Limits {
	var l Limits
	size := func(dst *int64) func(any, []string) {
		return func(v any, key []string) {
			n, err := sizeValue(v)
			if err != nil {
				ps.add(key, "%v", err)
				return
			}
			*dst = n
		}
	}
	walkTable(v, key, ps, map[string]func(any, []string){
		"time": func(v any, key []string) {
			s, ok := v.(string)
			if !ok {
				ps.add(key, "must be a duration string such as \"90s\", not %s", tomlType(v))
				return
			}
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				ps.add(key, "%q is not a positive duration (use Go syntax: \"90s\", \"10m\", \"1h30m\")", s)
				return
			}
			l.Time = d
		},
		"memory": size(&l.Memory),
		"processes": func(v any, key []string) {
			n, ok := v.(int64)
			if !ok || n <= 0 || n > maxProcesses {
				ps.add(key, "must be an integer in 1..%d", maxProcesses)
				return
			}
			l.Processes = int(n)
		},
		"output":    size(&l.Output),
		"file_size": size(&l.FileSize),
		"tmp":       size(&l.Tmp),
	})
	l.check(key, ps)
	return l
}

// sizeValue reads a size: an integer number of bytes or a string ParseSize accepts.
func sizeValue(v any) (int64, error) {
	switch v := v.(type) {
	case int64:
		if v <= 0 {
			return 0, fmt.Errorf("%d is not a positive size", v)
		}
		return v, nil
	case string:
		n, err := ParseSize(v)
		if err != nil {
			return 0, err
		}
		return n, nil
	default:
		return 0, fmt.Errorf("must be a size such as \"64MiB\" or a number of bytes, not %s", tomlType(v))
	}
}

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	{"B", 1},
}

// ParseSize parses a positive size: plain bytes ("4096"), or a whole number
// with a unit: B, KiB/MiB/GiB/TiB (powers of 1024), KB/MB/GB/TB (powers of
// 1000), or K/M/G/T (powers of 1024, as in ulimit and docker).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t = strings.TrimSpace(strings.TrimSuffix(t, u.suffix))
			mult = u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || t[0] == '+' {
		return 0, fmt.Errorf("%q is not a size (use bytes or a unit: \"512KB\", \"64MiB\", \"1GiB\")", s)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n * mult, nil
}

// FormatSize renders n bytes in the largest binary unit that divides it.
func FormatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}
